"""The feedback store's per-tenant retention cache is bounded (issue 56.4: every per-tenant cache
of the API bounded); found unbounded by the 10k-tenant benchmark (19,987 entries at 20k tenants)."""

from __future__ import annotations

from typing import Any

import brain_search.feedback.store as store
from brain_search.config import load_settings
from brain_search.feedback.store import FeedbackStore


class _Tenants:
    """The tenants index's GET, counted: no tenant has a retention of its own."""

    def __init__(self) -> None:
        self.gets = 0

    def get(self, **_: Any) -> dict[str, Any]:
        self.gets += 1
        return {"found": False}


def test_the_retention_cache_keeps_the_newest_tenants_only(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(store, "RETENTION_CACHE_SIZE", 3)
    engine = _Tenants()
    feedback = FeedbackStore(engine, load_settings())  # type: ignore[arg-type]
    for t in ("a", "b", "c", "d"):
        assert feedback.retention_s(t) == feedback.default_retention_s
    assert list(feedback._retention) == ["b", "c", "d"] and engine.gets == 4
    feedback.retention_s("d")  # still cached
    assert engine.gets == 4
    feedback.retention_s("a")  # forgotten: read again, and the oldest ("b") leaves
    assert engine.gets == 5 and list(feedback._retention) == ["c", "d", "a"]
