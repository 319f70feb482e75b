"""How a request picks its target: ``z_value`` beats ``focus`` beats detection (the presets
themselves are data in ``zscale``)."""

from __future__ import annotations

from dataclasses import replace

from brain_search.models import Focus, Intent
from brain_search.retrieval.intent import QueryIntent
from brain_search.retrieval.zscale import FOCUS_PRESETS, Z_OVERRIDE_TOLERANCE, intent_tier


def apply_overrides(detected: QueryIntent, focus: Focus, z_value: float | None) -> tuple[QueryIntent, str]:
    """``z_value`` beats ``focus`` beats auto-detection (spec 3.3). Returns (intent, source)."""
    if z_value is not None:
        return _with_target(detected, z_value, Z_OVERRIDE_TOLERANCE), "z_value"
    if focus is not Focus.auto:
        preset = FOCUS_PRESETS[focus]
        return _with_target(detected, preset.target, preset.tolerance, Intent(focus.value)), "focus"
    return detected, "auto"


def _with_target(detected: QueryIntent, z: float, tolerance: float, label: Intent | None = None) -> QueryIntent:
    return replace(detected, detected_intent=label or intent_tier(z), target_z=z, z_tolerance=tolerance, confidence=1.0)
