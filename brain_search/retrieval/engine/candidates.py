"""A recall's candidates as the pipeline carries them: what the engine returned (``Candidate``),
what the ranking reads (``CandidateFeatures``), the ranked whole (``Ranked``) and the response
model of one of them (``memory_result``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brain_search.errors import StoreUnavailable
from brain_search.models import MatchKind, MemoryResult, NodeRef, ResultMetadata, Scores
from brain_search.retrieval.engine import queries


@dataclass
class Candidate:
    doc_id: str
    source: dict[str, Any]
    bm25: float | None = None
    cosine: float | None = None
    matched: set[str] = field(default_factory=set)
    lexical_hit: bool = False
    """a hit of the BM25 sub-search (its score sets the BM25 normalisation range)"""
    semantic_hit: bool = False
    """one of the kNN sub-search's top k (its cosine sets the cosine normalisation range)"""


@dataclass(frozen=True)
class CandidateFeatures:
    """Everything the ranking reads, aligned by candidate (the eval's fitter stores these)."""

    ids: list[str]
    lexical: list[float]
    semantic: list[float]
    bm25: list[float]
    cosine: list[float]
    in_lexical: list[bool]
    in_semantic: list[bool]
    z: list[float] | None = None
    """Z position per candidate (the response's formula); None: the spec's, from lexical/semantic"""
    strength: list[float] | None = None
    """match strength (0–1, ``zaxis.match``): what the relevance floor reads"""
    kinds: list[str] | None = None
    """``MatchKind`` per candidate"""
    nodes: list[str] | None = None
    """each candidate's knowledge-graph node (its own id when it has none): node evidence"""
    shown: list[bool] | None = None
    """whether each candidate clears the relevance floor (``ZCalibration.clears_floor``)"""
    liftable: list[bool] | None = None
    """whether each candidate's strength is above the floor (``ZCalibration.above_floor``): only
    those are lifted by their node (None: every one)"""


@dataclass
class Ranked:
    """One recall's candidates, scored and ordered (``order``: indices, best first)."""

    cands: list[Candidate]
    lexical: list[float]
    semantic: list[float]
    zs: list[float]
    relevance: list[float]
    kinds: list[MatchKind]
    strength: list[float]
    order: list[int]
    calibrated: list[float] = field(default_factory=list)
    """each candidate's calibrated relevance (``ZCalibration.relevance``)"""
    shown: list[bool] = field(default_factory=list)
    """each candidate clears the relevance floor (``ZCalibration.clears_floor``)"""
    _built: dict[int, MemoryResult] = field(default_factory=dict)

    def result(self, i: int) -> MemoryResult:
        if i not in self._built:
            self._built[i] = memory_result(
                self.cands[i], self.lexical[i], self.semantic[i], self.zs[i], rank=self.relevance[i],
                kind=self.kinds[i], strength=self.strength[i], calibrated=self.calibrated[i], clears=self.shown[i],
            )  # fmt: skip
        return self._built[i]


def memory_result(
    c: Candidate,
    lex: float,
    sem: float,
    z: float,
    *,
    rank: float,
    kind: MatchKind,
    strength: float,
    calibrated: float,
    clears: bool,
) -> MemoryResult:
    """The response model of one ranked candidate (``rank``: its ranking score; ``calibrated``:
    its calibrated relevance)."""
    src = c.source
    meta = src.get("metadata")
    return MemoryResult(
        id=src.get("memory_id", c.doc_id),
        content=src.get("content", ""),
        node=NodeRef(id=src.get("node_id"), label=src.get("node_path")),
        scores=Scores(
            lexical=round(lex, 6),
            semantic=round(sem, 6),
            z_position=round(z, 6),
            relevance=round(calibrated, 4),
            rank=rank,
            match=round(strength, 6),
            clears_floor=clears,
        ),
        match_kind=kind,
        metadata=ResultMetadata(
            timestamp=src.get("timestamp"),
            source=src.get("source"),
            conversation_id=src.get("conversation_id"),
            user_id=src.get("user_id"),
            agent_id=src.get("agent_id"),
            extra=meta if isinstance(meta, dict) else None,
            superseded_by=src.get("superseded_by"),
            valid_until=src.get("valid_until"),
        ),
    )


def legs_candidates(hits: list[list[dict[str, Any]]], has_lexical: bool, k: int) -> dict[str, Candidate]:
    """The candidates of a BM25 and a kNN sub-search (``hits``: the BM25 one's, when
    ``has_lexical``, then the kNN one's): the BM25 hits, then the kNN top ``k`` (by cosine when
    several shards sent theirs) that are not among them (pure)."""
    candidates: dict[str, Candidate] = {}
    if has_lexical:
        for hit in hits[0]:
            candidates[hit["_id"]] = Candidate(
                hit["_id"],
                hit["_source"],
                bm25=float(hit["_score"] or 0.0),
                cosine=hit_cosine(hit),
                matched=set(hit.get("matched_queries", [])),
                lexical_hit=True,
            )
    knn_hits = hits[1 if has_lexical else 0]
    if len(knn_hits) > k:  # several shards' top k: keep the k most similar overall
        knn_hits = sorted(knn_hits, key=hit_cosine, reverse=True)[:k]
    for hit in knn_hits:
        if hit["_id"] in candidates:  # a BM25 hit too: same BM25, same cosine
            candidates[hit["_id"]].semantic_hit = True
            continue
        bm25 = float(hit["_score"] or 0.0) if has_lexical else 0.0
        matched = set(hit.get("matched_queries", []))
        candidates[hit["_id"]] = Candidate(
            hit["_id"], hit["_source"], bm25, hit_cosine(hit), matched, semantic_hit=True
        )
    return candidates


def hit_cosine(hit: dict[str, Any]) -> float:
    values = hit.get("fields", {}).get(queries.COSINE_FIELD)
    if not values:
        raise StoreUnavailable(f"memory {hit.get('_id')} came back without its cosine (no stored vector?)")
    return float(values[0])
