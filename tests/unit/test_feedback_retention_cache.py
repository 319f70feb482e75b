"""The feedback store's per-tenant retention cache is bounded (issue 56.4: every per-tenant cache
of the API bounded); found unbounded by the 10k-tenant benchmark (19,987 entries at 20k tenants)."""

from __future__ import annotations

from typing import Any

from brain_search.config import load_settings
from brain_search.feedback.store import FeedbackStore
from brain_search.lru import entry_size


class _Tenants:
    """The tenants index's GET, counted: no tenant has a retention of its own."""

    def __init__(self) -> None:
        self.gets = 0

    def get(self, **_: Any) -> dict[str, Any]:
        self.gets += 1
        return {"found": False}


def test_the_retention_cache_keeps_the_newest_tenants_only() -> None:
    engine = _Tenants()
    feedback = FeedbackStore(engine, load_settings())  # type: ignore[arg-type]
    one = entry_size("a", (feedback.default_retention_s, 0.0))
    feedback._retention.max_bytes = 3 * one + one // 2  # room for three tenants
    for t in ("a", "b", "c", "d"):
        assert feedback.retention_s(t) == feedback.default_retention_s
    assert list(feedback._retention) == ["b", "c", "d"] and engine.gets == 4
    feedback.retention_s("d")  # still cached
    assert engine.gets == 4
    feedback.retention_s("a")  # forgotten: read again, and the oldest ("b") leaves
    assert engine.gets == 5 and list(feedback._retention) == ["c", "d", "a"]
