"""Tiered retrieval (spec 3.4): the tier of a Z position, and the tiers of a ranked response."""

from __future__ import annotations

from collections.abc import Sequence

from brain_search.models import MatchKind
from brain_search.retrieval.zscale import VIEW_NAMES as TIER_NAMES
from brain_search.retrieval.zscale import view_of as tier_of

__all__ = ["TIER_NAMES", "select", "tier_of"]


def select(
    order: Sequence[int], zs: Sequence[float], kinds: Sequence[MatchKind], shown: Sequence[bool], *, per_tier: int
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
