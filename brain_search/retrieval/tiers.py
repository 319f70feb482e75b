"""Tiered retrieval (spec 3.4): the tier of a Z position, and the tiers of a ranked response."""

from __future__ import annotations

from brain_search.models import MatchKind, MemoryResult, Tiers

TIER_NAMES = ("exact_matches", "precise_matches", "semantic_matches", "conceptual_matches")


def tier_of(z: float) -> str:
    """Spec 3.4: exact Z<0.3, precise 0.3≤Z<0.5, semantic 0.5≤Z<0.7, conceptual Z≥0.7."""
    if z < 0.3:
        return "exact_matches"
    if z < 0.5:
        return "precise_matches"
    if z < 0.7:
        return "semantic_matches"
    return "conceptual_matches"


def group_tiers(shown: list[MemoryResult], per_tier: int) -> Tiers:
    """Group the results that cleared the relevance floor by Z (spec 3.4), at most
    ``per_tier`` each, in relevance order; in the Exact tier the memories holding the phrase
    come first (spec: exact matches always show when they exist)."""
    ordered = sorted(shown, key=lambda r: r.match_kind is not MatchKind.phrase)  # stable: relevance within
    groups: dict[str, list[MemoryResult]] = {}
    for r in ordered:
        bucket = groups.setdefault(tier_of(r.scores.z_position), [])
        if len(bucket) < per_tier:
            bucket.append(r)
    return Tiers(**groups)
