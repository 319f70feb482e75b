"""The Z axis's one scale: the tiers' bounds (spec section 2), each tier's target, the five focus
presets, the tiered views' bounds (3.4), where each kind of match is placed (the calibrated Z,
``zaxis.match``), the target from which a broad recall returns its theme, and the spec's literal
formula (3.1). Everything that names a place on the axis reads it here: intent detection (a tier's
target, ``intent_tier``), the request's ``focus`` / ``z_value`` (``presets.apply_overrides``), the
calibrated Z of a match (``zaxis.match``: ``PHRASE_Z``, ``words_z``, ``terms_z``, ``meaning_z``),
the theme recall (``THEME_Z``), the response's tiered views (``tiers.select``) and the ``spec`` Z
formula (``scoring.features``, ``ranking``).

Changing a preset, a tier's bounds, a kind of match's place or the spec's formula is an edit of
this file only. ``score/zaxis.py`` is its reader: it decides which kind of match a memory is and
how far along that kind's band; the places are numbers here, the decisions there.
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


THEME_Z = 0.8
"""the target Z from which a node-scoped recall returns its theme (``theme.py``)"""


@dataclass(frozen=True)
class Band:
    """A stretch of the axis one kind of match is placed in: ``start`` where the placement's
    measure is 0, moving by ``span`` per unit of it (a negative span runs down the axis)."""

    start: float
    span: float


PHRASE_Z = 0.05
"""Exact: the memory holds the quoted phrase, or the cue-stripped query as a phrase"""
WORDS_Z = Band(0.10, 0.15)
"""Exact: every content word of the query literally, close together: 0.10 at the tightest, 0.25
at the edge of the window (``words_z``)"""
TERMS_Z = Band(0.30, 0.19)
"""Precise: 0.30 when the memory holds all of the query's terms, up to 0.49 at the least share
a Precise match holds (``terms_z``)"""
MEANING_BELOW_FLOOR = Band(0.9, 0.1)
"""a match in other words below the floor: 0.9 at the floor, up to 1.0 at strength 0"""
MEANING_TO_STRONG = Band(0.9, -0.35)
"""from the floor (0.9) down to 0.55 at the strength of a memory at ``cos_strong`` sharing no word"""
MEANING_TO_ONE = Band(0.55, -0.05)
"""from there down to 0.5 at strength 1"""


def words_z(tight: float) -> float:
    """Z of an Exact match on every content word: ``tight`` 0 (the words side by side) to 1 (at
    the window's edge), clipped."""
    return WORDS_Z.start + WORDS_Z.span * min(max(tight, 0.0), 1.0)


def terms_z(shared: float, precise_share: float) -> float:
    """Z of a Precise match holding the weighted share ``shared`` of the query's terms
    (``precise_share`` at least)."""
    return TERMS_Z.start + TERMS_Z.span * (1 - shared) / max(1 - precise_share, 1e-6)


def meaning_z(strength: float, floor: float, strong: float) -> float:
    """Z of a match in mostly other words, by its strength: ``MEANING_BELOW_FLOOR`` under the
    ``floor``, then ``MEANING_TO_STRONG`` up to ``strong`` (a memory at ``cos_strong`` sharing no
    word: a typical answer, said otherwise), then ``MEANING_TO_ONE`` up to strength 1, linear in
    each."""
    if strength < floor:
        return MEANING_BELOW_FLOOR.start + MEANING_BELOW_FLOOR.span * (1 - strength / floor)
    if strength < strong:
        return MEANING_TO_STRONG.start + MEANING_TO_STRONG.span * (strength - floor) / (strong - floor)
    return MEANING_TO_ONE.start + MEANING_TO_ONE.span * min((strength - strong) / (1 - strong), 1.0)


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
