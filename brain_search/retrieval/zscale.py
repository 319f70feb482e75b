"""The Z axis's one scale: the tiers' bounds (spec section 2), each tier's target, the five focus
presets, the tiered views' bounds (3.4) and the spec's literal formula (3.1). Everything that
names a place on the axis reads it here: intent detection (a tier's target, ``intent_tier``), the
request's ``focus`` / ``z_value`` (``presets.apply_overrides``), the response's tiered views
(``tiers.select``) and the ``spec`` Z formula (``scoring.features``, ``ranking``).

Changing a preset, a tier's bounds or the spec's formula is an edit of this file only.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from brain_search.models import Focus, Intent


@dataclass(frozen=True)
class FocusPreset:
    """Where a ``focus`` puts the target, and how far around it results still count as close."""

    target: float
    tolerance: float


TIER_BOUNDS: tuple[tuple[float, Intent], ...] = (
    (0.2, Intent.exact),
    (0.4, Intent.precise),
    (0.6, Intent.balanced),
    (0.8, Intent.conceptual),
    (1.01, Intent.broad),
)
"""Each tier's upper bound (exclusive); the lower bound is the tier before's."""

TIER_TARGETS: MappingProxyType[Intent, float] = MappingProxyType(
    {
        Intent.exact: 0.1,
        Intent.precise: 0.3,
        Intent.balanced: 0.5,
        Intent.conceptual: 0.7,
        Intent.broad: 0.9,
    }
)
"""A detected tier's target Z: the middle of the tier."""

FOCUS_PRESETS: MappingProxyType[Focus, FocusPreset] = MappingProxyType(
    {
        Focus.exact: FocusPreset(TIER_TARGETS[Intent.exact], 0.15),
        Focus.precise: FocusPreset(TIER_TARGETS[Intent.precise], 0.15),
        Focus.balanced: FocusPreset(TIER_TARGETS[Intent.balanced], 0.2),
        Focus.conceptual: FocusPreset(TIER_TARGETS[Intent.conceptual], 0.15),
        Focus.broad: FocusPreset(TIER_TARGETS[Intent.broad], 0.15),
    }
)
"""The five presets of ``focus`` (spec 3.3): the tier's target, a tolerance per preset."""

Z_OVERRIDE_TOLERANCE = 0.15
"""The tolerance around an explicit ``z_value``."""

VIEW_BOUNDS: tuple[tuple[float, str], ...] = (
    (0.3, "exact_matches"),
    (0.5, "precise_matches"),
    (0.7, "semantic_matches"),
    (float("inf"), "conceptual_matches"),
)
"""The tiered views of a response (spec 3.4), each view's upper bound (exclusive): four views
over the five tiers, with their own bounds (the spec's, kept as it writes them)."""
VIEW_NAMES = tuple(name for _, name in VIEW_BOUNDS)


def intent_tier(z: float) -> Intent:
    """The tier (section 2) a Z falls in."""
    for bound, intent in TIER_BOUNDS:
        if z < bound:
            return intent
    return Intent.broad


def view_of(z: float) -> str:
    """The view (spec 3.4) a Z falls in: exact Z<0.3, precise 0.3≤Z<0.5, semantic 0.5≤Z<0.7,
    conceptual Z≥0.7."""
    return next(name for bound, name in VIEW_BOUNDS if z < bound)


def spec_z(lexical: float, semantic: float) -> float:
    """The spec's literal Z (3.1): semantic / (lexical + semantic); 0.5 when both are 0."""
    total = lexical + semantic
    return 0.5 if total <= 0.0 else semantic / total
