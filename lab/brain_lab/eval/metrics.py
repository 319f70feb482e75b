"""Pure IR metrics over one ranked list of ids and the graded relevant ids of one query.

Definitions follow trec_eval / pytrec_eval as BEIR uses them, so SciFact figures compare with the
published ones: recall@k = |relevant ∩ top k| / |relevant|; nDCG@k with gain = grade and discount
1 / log2(rank + 1), ideal ordering from the grades; reciprocal rank of the first relevant id
within the list (0 when none). Every function returns a value in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    if not relevant:
        return 0.0
    hits = sum(1 for doc in dict.fromkeys(ranked[:k]) if relevant.get(doc, 0) > 0)
    return hits / sum(1 for g in relevant.values() if g > 0)


def dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    ideal = dcg(sorted((g for g in relevant.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg(relevant.get(doc, 0) for doc in list(dict.fromkeys(ranked))[:k]) / ideal


def reciprocal_rank(ranked: Sequence[str], relevant: Mapping[str, int], k: int | None = None) -> float:
    for i, doc in enumerate(ranked[:k] if k else ranked):
        if relevant.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


METRICS = {
    "R@5": lambda r, rel: recall_at_k(r, rel, 5),
    "R@10": lambda r, rel: recall_at_k(r, rel, 10),
    "R@100": lambda r, rel: recall_at_k(r, rel, 100),
    "nDCG@10": lambda r, rel: ndcg_at_k(r, rel, 10),
    "MRR@10": lambda r, rel: reciprocal_rank(r, rel, 10),
}
"""Metric name → f(ranked ids, relevant) for the tables in the report."""


def score_query(ranked: Sequence[str], relevant: Mapping[str, int], names: Sequence[str]) -> dict[str, float]:
    return {name: METRICS[name](ranked, relevant) for name in names}


def paired_interval(
    a: Sequence[float], b: Sequence[float], resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """95 % paired-bootstrap interval of ``mean(a) − mean(b)``: the queries (aligned pairs) are
    resampled with replacement ``resamples`` times (fixed ``seed``: the same scores give the same
    interval), and the 2.5th and 97.5th percentiles of the mean difference are returned."""
    if len(a) != len(b) or not a:
        raise ValueError("paired_interval needs two aligned, non-empty score lists")
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    idx = np.random.default_rng(seed).integers(0, len(diff), size=(resamples, len(diff)))
    means = diff[idx].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)
