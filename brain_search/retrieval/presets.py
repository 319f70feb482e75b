"""The five Z focus presets (data, not if-chains) and how a request picks its target."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from brain_search.models import Focus, Intent
from brain_search.retrieval.intent import QueryIntent, intent_for_z

# focus → (target Z, tolerance). Targets sit mid-tier on the spec's Z table (section 2).
FOCUS_PRESETS: MappingProxyType[Focus, tuple[float, float]] = MappingProxyType(
    {
        Focus.exact: (0.1, 0.15),
        Focus.precise: (0.3, 0.15),
        Focus.balanced: (0.5, 0.2),
        Focus.conceptual: (0.7, 0.15),
        Focus.broad: (0.9, 0.15),
    }
)
Z_OVERRIDE_TOLERANCE = 0.15


def apply_overrides(detected: QueryIntent, focus: Focus, z_value: float | None) -> tuple[QueryIntent, str]:
    """``z_value`` beats ``focus`` beats auto-detection (spec 3.3). Returns (intent, source)."""
    if z_value is not None:
        return _with_target(detected, z_value, Z_OVERRIDE_TOLERANCE), "z_value"
    if focus is not Focus.auto:
        target, tolerance = FOCUS_PRESETS[focus]
        return _with_target(detected, target, tolerance, Intent(focus.value)), "focus"
    return detected, "auto"


def _with_target(detected: QueryIntent, z: float, tolerance: float, label: Intent | None = None) -> QueryIntent:
    return replace(
        detected, detected_intent=label or intent_for_z(z), target_z=z, z_tolerance=tolerance, confidence=1.0
    )
