"""The baseline systems, all over the same real index: BM25 only, kNN only, min-max fusion
(0.5/0.5, as OpenSearch's hybrid search normalises and combines) and RRF (k = 60).

The engine is asked once per query: one ``_msearch`` with a BM25 search per analysed field and one
efficient-filtered kNN search, each ``depth`` deep (like a hybrid query's sub-queries); every
baseline is then derived from those lists client-side (``fusion.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from opensearchpy import OpenSearch

from brain_lab.eval.fusion import Hit, min_max_fuse, rrf_fuse
from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.retrieval.engine.queries import knn_query
from brain_search.store.scope import scope_filter


def bm25_match(text: str, filters: list[dict[str, Any]], field: str = "content") -> dict[str, Any]:
    """The bare BM25 query a user would write (the engine's own statistics): the baseline."""
    return {"bool": {"must": [{"match": {field: {"query": text}}}], "filter": filters}}


def bm25_phrase(phrase: str, filters: list[dict[str, Any]], field: str = "content") -> dict[str, Any]:
    """The bare phrase query."""
    return {"bool": {"must": [{"match_phrase": {field: {"query": phrase}}}], "filter": filters}}


BM25_FIELDS = ("content", "content.en")
DEFAULT_DEPTH = 100
RRF_K = 60
# The BM25 field of the fusion baselines, chosen on the dev split (nDCG@10, content vs content.en):
# LoCoMo dev 0.397 vs 0.424, SciFact train 0.668 vs 0.699 — the English analyzer wins on both.
FUSION_FIELD = "content.en"


class RetrievalSystem(Protocol):
    """One named way to rank a tenant's memories for a query."""

    @property
    def name(self) -> str: ...

    def search(
        self,
        tenant_id: str,
        query: str,
        limit: int,
        *,
        until: datetime | None = None,
        reference_time: datetime | None = None,
    ) -> list[str]:
        """Memory ids, best first, at most ``limit``, of the memories at or before ``until``
        (None: all). ``reference_time``: what time words in the query are read against, for
        systems that read them (None: the system's own default)."""
        ...


@dataclass(frozen=True)
class Candidates:
    bm25: dict[str, list[Hit]]
    """field → hits."""
    knn: list[Hit]


class EngineCandidates:
    """BM25 (per field) and kNN hit lists for (tenant, query), fetched once and kept (LRU)."""

    def __init__(
        self,
        client: OpenSearch,
        settings: Settings,
        embedder: Embedder,
        depth: int = DEFAULT_DEPTH,
        fields: Sequence[str] = BM25_FIELDS,
        cache_size: int = 256,
    ) -> None:
        self.client = client
        self.settings = settings
        self.embedder = embedder
        self.depth = depth
        self.fields = tuple(fields)
        self._cache: OrderedDict[tuple[str, str, datetime | None], Candidates] = OrderedDict()
        self._cache_size = cache_size

    def _bodies(self, tenant_id: str, query: str, until: datetime | None = None) -> list[dict[str, Any]]:
        filters = scope_filter(tenant_id, until=until)
        header = {"routing": tenant_id}
        src = {"_source": ["memory_id"], "size": self.depth}
        lines: list[dict[str, Any]] = []
        for field in self.fields:
            lines += [header, {**src, "query": bm25_match(query, filters, field=field)}]
        vector = self.embedder.encode([query])[0]
        lines += [header, {**src, "query": knn_query(vector, self.depth, filters, self.settings.hnsw_ef_search)}]
        return lines

    def get(self, tenant_id: str, query: str, until: datetime | None = None) -> Candidates:
        """``until``: only memories at or before it (the engine's range filter on ``timestamp``)."""
        key = (tenant_id, query, until)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        resp = self.client.msearch(body=self._bodies(tenant_id, query, until), index=self.settings.memories_alias)
        lists: list[list[Hit]] = []
        for r in resp["responses"]:
            if "error" in r:
                raise RuntimeError(f"search failed: {r['error']}")
            lists.append([Hit(h["_source"]["memory_id"], float(h["_score"])) for h in r["hits"]["hits"]])
        cand = Candidates(bm25=dict(zip(self.fields, lists[:-1], strict=True)), knn=lists[-1])
        self._cache[key] = cand
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return cand


def _ids(hits: Sequence[Hit], limit: int) -> list[str]:
    return [h.memory_id for h in hits[:limit]]


class _FromCandidates:
    """A baseline ranking the (tenant, query, bound) candidates of ``EngineCandidates``."""

    candidates: EngineCandidates

    def rank(self, c: Candidates) -> Sequence[Hit]:
        raise NotImplementedError

    def search(
        self,
        tenant_id: str,
        query: str,
        limit: int,
        *,
        until: datetime | None = None,
        reference_time: datetime | None = None,
    ) -> list[str]:
        """``reference_time`` is not read: the baselines read no time words."""
        return _ids(self.rank(self.candidates.get(tenant_id, query, until)), limit)


@dataclass
class Bm25System(_FromCandidates):
    candidates: EngineCandidates
    field: str = "content"

    @property
    def name(self) -> str:
        return f"BM25 ({self.field})"

    def rank(self, c: Candidates) -> Sequence[Hit]:
        return c.bm25[self.field]


@dataclass
class KnnSystem(_FromCandidates):
    candidates: EngineCandidates
    name: str = "kNN"

    def rank(self, c: Candidates) -> Sequence[Hit]:
        return c.knn


@dataclass
class MinMaxFusionSystem(_FromCandidates):
    candidates: EngineCandidates
    field: str = "content"
    weights: tuple[float, float] = (0.5, 0.5)

    @property
    def name(self) -> str:
        return f"min-max {self.weights[0]:g}/{self.weights[1]:g} ({self.field})"

    def rank(self, c: Candidates) -> Sequence[Hit]:
        return min_max_fuse([c.bm25[self.field], c.knn], self.weights)


@dataclass
class RrfSystem(_FromCandidates):
    candidates: EngineCandidates
    field: str = "content"
    rank_constant: int = RRF_K

    @property
    def name(self) -> str:
        return f"RRF k={self.rank_constant} ({self.field})"

    def rank(self, c: Candidates) -> Sequence[Hit]:
        return rrf_fuse([c.bm25[self.field], c.knn], self.rank_constant)


def baseline_systems(candidates: EngineCandidates, fusion_field: str = FUSION_FIELD) -> list[RetrievalSystem]:
    """Every baseline: BM25 on each field, kNN, and the two fusions on ``fusion_field``."""
    systems: list[RetrievalSystem] = [Bm25System(candidates, f) for f in candidates.fields]
    systems.append(KnnSystem(candidates))
    systems.append(MinMaxFusionSystem(candidates, fusion_field))
    systems.append(RrfSystem(candidates, fusion_field))
    return systems
