"""Superseded and expired memories in recall, on the real stack (embedded mode)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration


def _ids(api: Any, headers: dict[str, str], query: str, **extra: Any) -> dict[str, dict[str, Any]]:
    r = api.post("/v1/recall", json={"query": query, "limit": 20, **extra}, headers=headers)
    assert r.status_code == 200, r.text
    return {m["id"]: m["metadata"] for m in r.json()["results"]}


def test_superseded_and_expired_memories_leave_recall_and_come_back(api, make_tenant) -> None:
    acme = make_tenant("acme")
    memories = [
        {"content": "the launch is in March", "memory_id": "a1", "timestamp": "2026-01-10T09:00:00Z"},
        {
            "content": "the launch moved to May",
            "memory_id": "b1",
            "supersedes": ["a1"],
            "timestamp": "2026-02-01T09:00:00Z",
        },
        {"content": "the offsite is in Lisbon", "memory_id": "c1", "valid_until": "2026-01-31T00:00:00Z"},
        {"content": "the offsite budget is 20k", "memory_id": "d1"},
    ]
    r = api.post("/v1/memories", json={"memories": memories, "refresh": True}, headers=acme)
    assert r.status_code == 202, r.text
    wait_task(api, acme, r.json()["task_id"])

    launch = _ids(api, acme, "when is the launch")
    assert "b1" in launch and "a1" not in launch
    both = _ids(api, acme, "when is the launch", include_superseded=True)
    assert both["a1"]["superseded_by"] == "b1" and both["b1"]["superseded_by"] is None
    offsite = _ids(api, acme, "the offsite")
    assert "d1" in offsite and "c1" not in offsite  # valid_until has passed
    assert _ids(api, acme, "the offsite", include_superseded=True)["c1"]["valid_until"].startswith("2026-01-31")
    got = api.get("/v1/memories/b1", headers=acme).json()
    assert got["supersedes"] == ["a1"]

    # the newer one deleted: the older is back
    assert api.delete("/v1/memories/b1", headers=acme).status_code == 204
    assert "a1" in _ids(api, acme, "when is the launch")

    # contradictions are a 422 naming the field, nothing queued
    self_ref = api.post("/v1/memories", json={"content": "x", "memory_id": "s1", "supersedes": ["s1"]}, headers=acme)
    assert self_ref.status_code == 422 and self_ref.json()["detail"][0]["loc"][-1] == "supersedes"
    early = api.post(
        "/v1/memories",
        json={"content": "x", "timestamp": "2026-03-01T00:00:00Z", "valid_until": "2026-02-01T00:00:00Z"},
        headers=acme,
    )
    assert early.status_code == 422 and early.json()["detail"][0]["loc"][-1] == "valid_until"


def test_more_superseding_memories_than_the_recall_brings_still_hide(api, make_tenant, monkeypatch) -> None:
    """The recall's own sub-search brings up to ``SUPERSEDERS_SHOWN`` superseding memories; past
    that, a search over the candidates' ids decides. Both paths hide the same memories."""
    from brain_search.retrieval.engine import queries

    acme = make_tenant("acme")
    memories = [{"content": f"the launch of project {p} is in March", "memory_id": f"old-{p}"} for p in "abc"]
    memories += [
        {"content": f"the launch of project {p} moved to May", "memory_id": f"new-{p}", "supersedes": [f"old-{p}"]}
        for p in "abc"
    ]
    r = api.post("/v1/memories", json={"memories": memories, "refresh": True}, headers=acme)
    assert r.status_code == 202, r.text
    wait_task(api, acme, r.json()["task_id"])

    shown = {}
    for cap in (200, 1):  # all three in the recall's own answer, then one of three: the fallback
        monkeypatch.setattr(queries, "SUPERSEDERS_SHOWN", cap)
        found = _ids(api, acme, "the launch of project")
        marked = _ids(api, acme, "the launch of project", include_superseded=True)
        shown[cap] = (sorted(found), {k: v["superseded_by"] for k, v in marked.items()})
    assert shown[200] == shown[1]
    assert shown[1][0] == ["new-a", "new-b", "new-c"]
    assert shown[1][1] == {f"old-{p}": f"new-{p}" for p in "abc"} | {f"new-{p}": None for p in "abc"}


def test_conversation_context_leaves_superseded_turns_out(api, make_tenant) -> None:
    """The context's turns skip a turn a later memory supersedes (read from the superseders'
    doc values, as recall reads them)."""
    acme = make_tenant("acme-ctx")
    turns = [
        {"content": "Maya: the launch is in March", "memory_id": "c1", "timestamp": "2026-01-10T09:00:00Z"},
        {"content": "Ben: then the launch party is in March", "memory_id": "c2", "timestamp": "2026-01-10T09:01:00Z"},
        {"content": "Maya: the launch moved to May", "memory_id": "c3", "timestamp": "2026-01-10T09:02:00Z"},
    ]
    for t in turns:
        t["conversation_id"] = "launch-chat"
    turns[2]["supersedes"] = ["c1"]
    r = api.post("/v1/memories", json={"memories": turns, "refresh": True}, headers=acme)
    assert r.status_code == 202, r.text
    wait_task(api, acme, r.json()["task_id"])
    r = api.post("/v1/recall", json={"query": "what did we discuss about the launch?", "context": 3}, headers=acme)
    assert r.status_code == 200, r.text
    [conv] = r.json()["conversations"]
    assert [t["id"] for t in conv["turns"]] == ["c2", "c3"]
