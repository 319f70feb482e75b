"""Tiered retrieval (spec 3.4): the tier of a Z position, and the tiers of a ranked response."""

from __future__ import annotations

from collections.abc import Sequence

from brain_search.models import MatchKind

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


def select(
    order: Sequence[int], zs: Sequence[float], kinds: Sequence[MatchKind], shown: Sequence[bool], per_tier: int
) -> dict[str, list[int]]:
    """Which candidates each tier shows (pure, over indices): those ``shown`` (above the relevance
    floor), in ``order`` (relevance), at most ``per_tier`` per tier, the memories holding the
    phrase first (spec: exact matches always show when they exist)."""
    ordered = sorted((i for i in order if shown[i]), key=lambda i: kinds[i] is not MatchKind.phrase)  # stable
    groups: dict[str, list[int]] = {name: [] for name in TIER_NAMES}
    for i in ordered:
        bucket = groups[tier_of(zs[i])]
        if len(bucket) < per_tier:
            bucket.append(i)
    return groups
