"""The recall's one round trip: its sub-search bodies (``recall_bodies``, the lexical clause weighed
by the tenant's statistics), the NDJSON ``_msearch`` that carries them (``Wire.payload``) and its
answers, checked (``Wire.send``). ``retrieval/pipeline.py`` decides when to search (and to search
again); this module only builds, sends and reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.models import PartialResults
from brain_search.retrieval.engine import queries
from brain_search.retrieval.engine.shards import complete
from brain_search.retrieval.engine.tenant_stats import (
    StatsCache,
    TenantStats,
    counts_request,
    stats_from,
    stats_key,
    tenant_clause,
)
from brain_search.store.scope import TenantScope


def recall_bodies(
    *,
    scope: TenantScope,
    lexical_query: str,
    phrases: Sequence[str],
    terms: list[str],
    filters: list[dict[str, Any]],
    k: int,
    vector: list[float],
    stats: TenantStats | None,
    has_lexical: bool,
    settings: Settings,
) -> list[dict[str, Any]]:
    """A recall's ``_msearch`` sub-search bodies: the BM25 one (when the query has words), the kNN
    one and the tenant's superseders, last. ``stats``: the tenant's counts the lexical clause
    weighs its words with (None: the index's own BM25)."""
    lexical = tenant_clause(terms, phrases, stats) if stats is not None else None
    shards = max(1, settings.shards)
    bodies = []
    if has_lexical:
        bodies.append(
            queries.lexical_search(lexical_query, phrases, terms, filters, size=k, vector=vector, lexical=lexical)
        )
    # the search is not routed: every shard returns its own top k (cut to k by cosine later)
    bodies.append(
        queries.knn_search(
            vector,
            k,
            terms,
            phrases,
            filters=filters,
            ef_search=settings.hnsw_ef_search,
            lexical_query=lexical_query,
            size=k * shards,
            lexical=lexical,
        )
    )
    # last: newer_versions() reads it, so hiding superseded memories costs no round trip of its own
    bodies.append(queries.superseders(scope, queries.SUPERSEDERS_SHOWN))
    return bodies


@dataclass(frozen=True)
class Answers:
    """One ``_msearch``'s answers (``Wire.send``)."""

    responses: list[dict[str, Any]]
    """each sub-search's answer, checked, in the order of the bodies"""
    missing: PartialResults | None
    """the shards that did not answer, when partial results were allowed"""
    fresh: TenantStats | None
    """the tenant's count that rode along (None when none did)"""


class Wire:
    """The ``_msearch`` of the recalls of one process: its search type and routing, read once from
    the settings, and the statistics cache a count that rides along refreshes."""

    def __init__(self, client: OpenSearch, settings: Settings, stats_cache: StatsCache) -> None:
        self.client = client
        self.stats_cache = stats_cache
        self.routed = settings.lexical_stats == "tenant"
        # DFS gathers index statistics across shards; with the tenant's own (constant-score
        # clauses) nothing reads them, so the extra per-shard phase would be spent for nothing
        dfs = settings.shards > 1 and settings.lexical_stats == "index"
        self.search_type = "dfs_query_then_fetch" if dfs else "query_then_fetch"

    def payload(self, scope: TenantScope, bodies: list[dict[str, Any]]) -> str:
        """The NDJSON body of one ``_msearch`` over the memories alias.

        Routed to the tenant's shards (``routing=tenant``, as its documents are written): with
        the tenant's own BM25 (``lexical_stats="tenant"``, the default) no score reads a shard's
        statistics, so the shards that hold none of the tenant's memories have nothing to add and
        are not asked (with the chart's 12 primaries and a routing partition of 3, a recall
        touches 3 shards, not 12). With index statistics (``lexical_stats="index"``) the recall
        stays unrouted with a DFS phase: routed, the DFS phase would only see the tenant's
        shards, whose statistics mix in whichever tenants share them. Either way the same recall
        as on one shard (tests/integration/test_cluster.py).

        orjson, not json: the bodies carry the query vector three times and the standard
        encoder's float repr made this the largest Python cost of a recall (about 20× slower
        for 384 floats); the output parses back to the same floats."""
        header = orjson.dumps({"search_type": self.search_type, **(scope.params() if self.routed else {})})
        return b"".join(header + b"\n" + orjson.dumps(b) + b"\n" for b in bodies).decode()

    @staticmethod
    def with_counts(payload: str, scope: TenantScope, counted: Sequence[str]) -> str:
        """``payload`` with the tenant's counts of ``counted`` riding along (none: as it is)."""
        return payload + counts_request(scope, counted) if counted else payload

    def send(
        self,
        scope: TenantScope,
        payload: str,
        *,
        bodies: int,
        counted: Sequence[str] = (),
        allow_partial: bool = False,
    ) -> Answers:
        """The answers of the ``bodies`` sub-searches of ``payload`` (checked), what was missing,
        and the tenant's fresh count of ``counted`` when it rode along (kept in the cache)."""
        answers = self.client.msearch(body=payload, index=scope.index)["responses"]
        checked = [complete(r, allow_partial) for r in answers[:bodies]]
        missing = next((m for _, m in checked if m is not None), None)
        fresh = None
        if counted:  # a lost tenant shard: the search said so above (503), or is marked partial
            fresh = stats_from(answers[bodies], counted)
            self.stats_cache.put(stats_key(scope), fresh)
        return Answers([r for r, _ in checked], missing, fresh)
