"""Issue 55 item 7, the API side: one memory's errors name its own field, a body sent without
`content-type: application/json` is told so, a date alone as `until` is the end of that day (as in
the CLI), a replaced memory names what replaced it, and a task record says when it ended."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration


def _loc(r: Any) -> list[Any]:
    assert r.status_code == 422, r.text
    return list(r.json()["detail"][0]["loc"])


def _write(api: Any, headers: dict[str, str], memories: list[dict[str, Any]]) -> dict[str, Any]:
    r = api.post("/v1/memories", json={"memories": memories, "refresh": True}, headers=headers)
    assert r.status_code == 202, r.text
    task = wait_task(api, headers, r.json()["task_id"])
    assert task["indexed"] == len(memories), task
    return task


def test_one_memory_errors_name_its_fields(api, make_tenant) -> None:
    headers = make_tenant("fric")
    assert _loc(api.post("/v1/memories", json={"content": 5}, headers=headers)) == ["body", "content"]
    assert _loc(api.post("/v1/memories", json={"content": "  "}, headers=headers)) == ["body", "content"]
    r = api.post("/v1/memories", json={"memory_id": "m1", "refresh": True}, headers=headers)
    assert _loc(r) == ["body", "content"] and "required" in r.json()["detail"][0]["msg"].lower(), r.text
    r = api.post("/v1/memories", json={"content": "x", "timestamp": "soon"}, headers=headers)
    assert _loc(r) == ["body", "timestamp"]
    deep: dict[str, Any] = {"k": 1}
    for _ in range(19):
        deep = {"k": deep}
    r = api.post("/v1/memories", json={"content": "x", "metadata": deep}, headers=headers)  # checked after the model
    assert _loc(r) == ["body", "metadata"], r.text
    # a batch still names the item
    batch = {"memories": [{"content": "ok"}, {"content": 5}]}
    assert _loc(api.post("/v1/memories", json=batch, headers=headers)) == ["body", "memories", 1, "content"]


def test_a_body_without_its_content_type_is_told_to_send_json(api, make_tenant) -> None:
    headers = make_tenant("fric")
    for path, body in (("/v1/memories", b'{"content": "x"}'), ("/v1/recall", b'{"query": "x"}')):
        r = api.post(path, content=body, headers=headers)
        assert r.status_code == 415, r.text
        assert "body" in r.json()["detail"] and "content-type: application/json" in r.json()["detail"], r.text
        r = api.post(path, content=body, headers={**headers, "content-type": "text/plain"})
        assert r.status_code == 415, r.text
    # JSON that is not an object, and no body at all, are still a 422 naming the body
    r = api.post("/v1/recall", json=["x"], headers=headers)
    assert _loc(r) == ["body"], r.text
    assert _loc(api.post("/v1/recall", headers=headers)) == ["body"]


def test_until_a_date_is_the_end_of_that_day(api, make_tenant) -> None:
    headers = make_tenant("fric")
    _write(
        api,
        headers,
        [
            {
                "content": "Paid the March rent for the Lisbon flat",
                "memory_id": "on-28",
                "timestamp": "2026-02-28T15:00:00Z",
            },
            {
                "content": "Paid the April rent for the Lisbon flat",
                "memory_id": "on-1",
                "timestamp": "2026-03-01T09:00:00Z",
            },
        ],
    )
    r = api.post("/v1/recall", json={"query": "rent Lisbon flat", "until": "2026-02-28"}, headers=headers)
    assert r.status_code == 200, r.text
    assert [m["id"] for m in r.json()["results"]] == ["on-28"], r.text
    assert r.json()["query_analysis"]["time_range"]["until"].startswith("2026-02-28T23:59:59"), r.text
    listed = api.get("/v1/memories", params={"until": "2026-02-28"}, headers=headers).json()
    assert [m["memory_id"] for m in listed["memories"]] == ["on-28"], listed
    listed = api.get("/v1/memories", params={"since": "2026-03-01"}, headers=headers).json()
    assert [m["memory_id"] for m in listed["memories"]] == ["on-1"], listed  # since: the day's start
    forgot = api.post("/v1/forget", json={"until": "2026-02-28"}, headers=headers).json()
    while forgot["state"] == "running":
        forgot = api.get(f"/v1/forget/{forgot['task_id']}", headers=headers).json()
    assert (forgot["state"], forgot["memories"]) == ("succeeded", 1), forgot
    assert api.get("/v1/memories/on-1", headers=headers).status_code == 200


def test_a_replaced_memory_names_its_replacement_and_tasks_say_when_they_ended(api, make_tenant) -> None:
    headers = make_tenant("fric")
    task = _write(
        api,
        headers,
        [
            {"content": "I live in Berlin", "memory_id": "home-berlin"},
            {"content": "I live in Lisbon now", "memory_id": "home-lisbon", "supersedes": ["home-berlin"]},
        ],
    )
    assert task["finished_at"] is not None, task
    assert datetime.fromisoformat(task["finished_at"]) >= datetime.fromisoformat(task["created_at"]), task
    old = api.get("/v1/memories/home-berlin", headers=headers).json()
    assert old["superseded_by"] == "home-lisbon", old
    assert api.get("/v1/memories/home-lisbon", headers=headers).json()["superseded_by"] is None
    # a task still queued has no finished_at
    r = api.post("/v1/memories", json={"content": "later", "memory_id": "later"}, headers=headers)
    status = api.get(f"/v1/tasks/{r.json()['task_id']}", headers=headers).json()
    assert (status["state"] in ("succeeded", "failed")) == (status["finished_at"] is not None), status


def test_a_worker_task_record_says_when_it_ended(wsettings, client) -> None:
    """The durable task record of worker mode (the in-process queue is covered above)."""
    from brain_search.ingest.models import IngestJob, JobResult, MemoryItem
    from brain_search.ingest.task_records import TaskRecords

    records = TaskRecords(client, wsettings)
    job = IngestJob(task_id="fric-1", tenant_id="acme", items=[MemoryItem(memory_id="m", content="x")])
    records.create(job)
    assert records.get("acme", "fric-1").finished_at is None
    records.succeeded("fric-1", JobResult(submitted=1, indexed=1, failed=0))
    done = records.get("acme", "fric-1")
    assert done.finished_at is not None and done.created_at is not None and done.finished_at >= done.created_at
