"""Pure score fusion, computed client-side exactly as OpenSearch's hybrid search does it.

Why client-side: the neural-search plugin (which holds the ``normalization-processor``) is not on
Maven Central for 3.5.0.0 (``org.opensearch.plugin:opensearch-neural-search:3.5.0.0:zip`` does not
resolve), so the local stack cannot run a hybrid query. These functions follow its source:

- ``min_max`` (``MinMaxScoreNormalizationTechnique``, no lower bounds): per sub-query,
  ``(s - min) / (max - min)`` over that sub-query's hits; a normalised 0 becomes 0.001; when a
  sub-query's min equals its max (e.g. one hit) every hit gets 1.0.
- ``arithmetic_mean`` (``ArithmeticMeanScoreCombinationTechnique`` + ``ScoreCombiner``): a hit
  absent from a sub-query scores 0 there and still counts that sub-query's weight, so
  ``sum(w_i * s_i) / sum(w_i)``.
- ``rrf`` (``RRFNormalizationTechnique``): ``sum(1 / (rank_constant + rank))``, rank from 1.

Ties keep first-seen order (sub-query order, then rank), which is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MIN_SCORE = 0.001
SINGLE_RESULT_SCORE = 1.0


@dataclass(frozen=True)
class Hit:
    memory_id: str
    score: float


def min_max_normalize(scores: Sequence[float]) -> list[float]:
    """OpenSearch's min-max normalisation of one sub-query's scores (values in (0, 1])."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    out = []
    for s in scores:
        if hi == lo:
            out.append(SINGLE_RESULT_SCORE)
            continue
        n = (s - lo) / (hi - lo)
        out.append(MIN_SCORE if n == 0.0 else n)
    return out


def _stable_sort(scores: dict[str, float]) -> list[Hit]:
    order = {doc: i for i, doc in enumerate(scores)}
    return [Hit(d, s) for d, s in sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))]


def min_max_fuse(lists: Sequence[Sequence[Hit]], weights: Sequence[float] | None = None) -> list[Hit]:
    """Min-max per list, then the weighted arithmetic mean (absent = 0, weight still counted)."""
    w = list(weights) if weights is not None else [1.0] * len(lists)
    if len(w) != len(lists):
        raise ValueError("one weight per list")
    total = sum(w)
    fused: dict[str, float] = {}
    for weight, hits in zip(w, lists, strict=True):
        for hit, norm in zip(hits, min_max_normalize([h.score for h in hits]), strict=True):
            fused[hit.memory_id] = fused.get(hit.memory_id, 0.0) + weight * norm
    return _stable_sort({d: s / total for d, s in fused.items()}) if total > 0 else []


def rrf_fuse(lists: Sequence[Sequence[Hit]], rank_constant: int = 60) -> list[Hit]:
    """Reciprocal rank fusion: each list contributes ``1 / (rank_constant + rank)``."""
    fused: dict[str, float] = {}
    for hits in lists:
        seen: set[str] = set()
        for rank, hit in enumerate(hits, start=1):
            if hit.memory_id in seen:
                continue
            seen.add(hit.memory_id)
            fused[hit.memory_id] = fused.get(hit.memory_id, 0.0) + 1.0 / (rank_constant + rank)
    return _stable_sort(fused)
