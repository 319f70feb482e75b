"""The summary's math (pure): a mean rating with its interval, a share with its interval, and the
summary read from one aggregation answer of the feedback index (``queries.summary_body``)."""

from __future__ import annotations

import math
from typing import Any

from brain_search_client.models.feedback import RatingStats, Share

RATING_MIN, RATING_MAX = 1.0, 5.0
Z95 = 1.959963984540054
# two-sided 95 % critical values of Student's t for 1–30 degrees of freedom
T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t95(df: int) -> float:
    """Student's t, two-sided 95 %: the table to 30 degrees of freedom, then the Cornish–Fisher
    expansion around the normal quantile (within 0.001 of the exact value beyond 30)."""
    if df < 1:
        raise ValueError("t95 needs at least one degree of freedom")
    if df <= len(T95):
        return T95[df - 1]
    z = Z95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_interval(count: int, total: float, total_sq: float) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high) of ratings from their count, sum and sum of squares: the mean and its
    95 % Student-t interval, clipped to the 1–5 scale. One rating says nothing about the spread:
    its interval is the whole scale. No rating: all None."""
    if count <= 0:
        return None, None, None
    mean = total / count
    if count == 1:
        return mean, RATING_MIN, RATING_MAX
    variance = max(0.0, (total_sq - total * total / count) / (count - 1))
    half = t95(count - 1) * math.sqrt(variance / count)
    return mean, max(RATING_MIN, mean - half), min(RATING_MAX, mean + half)


def wilson(successes: int, n: int) -> tuple[float | None, float | None, float | None]:
    """(share, low, high): ``successes / n`` and its 95 % Wilson score interval (0–1); all None
    when ``n`` is 0."""
    if n <= 0:
        return None, None, None
    p = successes / n
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def rating_stats(count: int, total: float, total_sq: float, distribution: dict[str, int] | None = None) -> RatingStats:
    mean, low, high = mean_interval(count, total, total_sq)
    return RatingStats(count=count, mean=mean, low=low, high=high, distribution=distribution or {})


def share(relevant: int, marked: int) -> Share:
    p, low, high = wilson(relevant, marked)
    return Share(marked=marked, relevant=relevant, share=p, low=low, high=high)


def _stats(agg: dict[str, Any], distribution: dict[str, int] | None = None) -> RatingStats:
    count = int(agg.get("count") or 0)
    return rating_stats(count, float(agg.get("sum") or 0.0), float(agg.get("sum_of_squares") or 0.0), distribution)


def _shares(buckets: list[dict[str, Any]], marked_of: str | None = None) -> dict[str, Share]:
    out = {}
    for b in buckets:
        inner = b[marked_of] if marked_of else b
        if not inner["doc_count"]:
            continue
        out[str(b["key"])] = share(int(inner["relevant"]["doc_count"]), int(inner["doc_count"]))
    return out


def parse_summary(aggs: dict[str, Any]) -> dict[str, Any]:
    """The summary's fields from the aggregations of ``queries.summary_body`` (without ``days``
    and ``worst``)."""
    dist = {str(int(b["key"])): int(b["doc_count"]) for b in aggs["distribution"]["buckets"]}
    marks = aggs["marks"]
    by_intent = aggs["by_intent"]["buckets"]
    return {
        "recalls_kept": int(aggs["kept"]["value"]),
        "rating": _stats(aggs["rating"], dict(sorted(dist.items()))),
        "relevant": share(int(marks["relevant"]["doc_count"]), int(marks["doc_count"])),
        "relevant_by_tier": _shares(marks["by_tier"]["buckets"]),
        "relevant_by_intent": _shares(by_intent, "marks"),
        "rating_by_intent": {str(b["key"]): _stats(b["rating"]) for b in by_intent if b["rating"].get("count")},
    }
