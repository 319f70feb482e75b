"""Issue 54 items 1 and 6: input the queue, the job signature or the engine cannot take is a 422
naming the field at the door, on every route, in MCP and in the CLI, and never touches what is
stored; a job that still cannot be sent (a record written before) never holds the others, in
the API's outbox or in the workers' reconcile pass. On the real engine and Redis."""

from __future__ import annotations

import io
import time
import uuid
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from brain_search.errors import InvalidInput
from brain_search.ingest.models import IngestJob, MemoryItem, TaskState
from brain_search.mcp.server import format_validation_error
from brain_search.mcp.tools import mcp_tools
from brain_search.tenancy.caller import Caller
from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration
JSON = {"content-type": "application/json"}
SURROGATE = "\\ud800"  # the JSON escape of a lone surrogate, sent as such (the raw bytes are not UTF-8)
EARLY = "0001-01-01T00:00:00+01:00"  # no UTC form (before year 1)
LATE = "9999-12-31T23:59:59-01:00"  # no UTC form (after year 9999)
FAR_OFFSET = "2026-01-01T00:00:00+23:00"  # Python takes it, the engine does not


def _raw(body: str) -> bytes:
    """``body`` with each ``@`` the escape of a lone surrogate (what a client sends as is)."""
    return body.replace("@", SURROGATE).encode()


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels - 1):
        node["a"] = {}
        node = node["a"]
    return root


def _loc(r: Any) -> list[Any]:
    assert r.status_code == 422, (r.status_code, r.text[:500])
    return list(r.json()["detail"][0]["loc"])


def _keep(api: Any, headers: dict[str, str]) -> dict[str, Any]:
    """Store the memory every test checks is untouched."""
    r = api.post(
        "/v1/memories", json={"content": "the kept memory", "memory_id": "keep", "refresh": True}, headers=headers
    )
    assert r.status_code == 202, r.text
    assert wait_task(api, headers, r.json()["task_id"])["indexed"] == 1
    return dict(api.get("/v1/memories/keep", headers=headers).json())


def _untouched(api: Any, headers: dict[str, str], kept: dict[str, Any]) -> None:
    page = api.get("/v1/memories", headers=headers).json()
    assert [m["memory_id"] for m in page["memories"]] == ["keep"]
    assert api.get("/v1/memories/keep", headers=headers).json() == kept


def _mcp_error(fn: Any, tenant: str, args: dict[str, Any]) -> str:
    """What the MCP server answers for these arguments (``mcp_server.build_server``'s mapping)."""
    with pytest.raises((ValidationError, InvalidInput)) as exc:
        fn(Caller(tenant), args)
    return format_validation_error(exc.value) if isinstance(exc.value, ValidationError) else str(exc.value)


def test_a_lone_surrogate_is_a_422_naming_the_field_at_every_door(api, api_state, make_tenant) -> None:
    """Item 1: POST (with and without a memory_id: a 202 that stalled the queue, and a 500), PUT,
    PATCH, recall, MCP brain_remember and the CLI refuse it, naming the field."""
    headers = {**make_tenant("surr"), **JSON}
    kept = _keep(api, headers)
    bodies = [
        (("content",), _raw('{"content": "a@b", "memory_id": "m1"}')),  # one memory: its own field (issue 55.7)
        (("content",), _raw('{"content": "a@b"}')),
        (("memory_id",), _raw('{"content": "ok", "memory_id": "m@"}')),
        (("metadata",), _raw('{"content": "ok", "metadata": {"k": ["x", "@"]}}')),
        (("memories", 1, "source"), _raw('{"memories": [{"content": "ok"}, {"content": "ok", "source": "@"}]}')),
    ]
    for loc, body in bodies:
        r = api.post("/v1/memories", content=body, headers=headers)
        assert _loc(r)[1:] == list(loc), r.text
    # a surrogate in a metadata key
    r = api.post("/v1/memories", content=_raw('{"content": "ok", "metadata": {"k@": 1}}'), headers=headers)
    assert _loc(r)[1:] == ["metadata"] and "key" in r.json()["detail"][0]["msg"]
    r = api.put("/v1/memories/keep", content=_raw('{"content": "new @"}'), headers=headers)
    assert _loc(r) == ["body", "content"]
    r = api.patch("/v1/memories/keep", content=_raw('{"content": "new @"}'), headers=headers)
    assert _loc(r) == ["body", "content"]
    r = api.patch("/v1/memories/keep", content=_raw('{"conversation_id": "c@"}'), headers=headers)
    assert _loc(r) == ["body", "conversation_id"]
    r = api.post("/v1/recall", content=_raw('{"query": "kept @"}'), headers=headers)
    assert _loc(r) == ["body", "query"]
    r = api.post("/v1/forget", content=_raw('{"source": "s@"}'), headers=headers)
    assert _loc(r) == ["body", "source"]

    remember, forget = mcp_tools(api_state.ingest, api_state.settings, api_state.graph)
    assert "content" in _mcp_error(remember, "surr", {"content": "a\ud800b", "memory_id": "m2"})
    assert "node" in _mcp_error(forget, "surr", {"node": "n\ud800"})

    # the CLI: a JSON Lines record is refused with its field; `remember` refuses before sending
    from brain_search.commands.cli import app
    from brain_search.ingest.sources import read_jsonl

    (record,) = read_jsonl(io.StringIO(_raw('{"content": "a@b"}\n').decode()))
    assert record.memory is None and record.error and record.error.startswith("content:"), record
    out = CliRunner().invoke(app, ["remember", "a\udcffb", "--api-url", "http://127.0.0.1:9", "--api-key", "bsk_x"])
    assert out.exit_code == 2 and "content: holds a lone UTF-16 surrogate" in out.output, out.output
    _untouched(api, headers, kept)
    # and nothing waits behind a refused write: the next one lands at once
    r = api.post("/v1/memories", json={"content": "after", "memory_id": "after", "refresh": True}, headers=headers)
    assert wait_task(api, headers, r.json()["task_id"], timeout_s=30)["indexed"] == 1


def test_edge_times_and_deep_metadata_are_a_422_naming_the_field_on_every_route(api, api_state, make_tenant) -> None:
    """Item 6: times with no UTC form or an offset past ±18:00 (a 500 OverflowError, a 202 then
    ``failed``, a 202 then dead-lettered) and metadata 450 levels deep (a 500 RecursionError)."""
    headers = {**make_tenant("edge"), **JSON}
    kept = _keep(api, headers)
    for name, value in (("since", EARLY), ("until", LATE), ("since", FAR_OFFSET)):
        assert _loc(api.get("/v1/memories", params={name: value}, headers=headers)) == ["query", name]
        assert _loc(api.post("/v1/forget", json={name: value}, headers=headers)) == ["body", name]
        r = api.post("/v1/recall", json={"query": "kept", name: value}, headers=headers)
        assert _loc(r) == ["body", name]
    assert _loc(api.delete("/v1/dead-letters", params={"before": LATE}, headers=headers)) == ["query", "before"]
    deep = _deep(450)
    writes: list[tuple[str, dict[str, Any]]] = [
        ("timestamp", {"timestamp": FAR_OFFSET}),
        ("timestamp", {"timestamp": EARLY}),
        ("valid_until", {"valid_until": LATE}),
        ("metadata", {"metadata": deep}),
    ]
    remember, forget = mcp_tools(api_state.ingest, api_state.settings, api_state.graph)
    for field, extra in writes:
        r = api.post("/v1/memories", json={"content": "x", "memory_id": "new", **extra}, headers=headers)
        assert _loc(r) == ["body", field], r.text
        assert _loc(api.put("/v1/memories/keep", json={"content": "x", **extra}, headers=headers)) == ["body", field]
        assert _loc(api.patch("/v1/memories/keep", json=extra, headers=headers)) == ["body", field]
        assert field in _mcp_error(remember, "edge", {"content": "x", **extra})
    assert "since" in _mcp_error(forget, "edge", {"since": EARLY})
    assert "until" in _mcp_error(forget, "edge", {"until": LATE})
    # within the door's bound but past the deployment's own limit: still the field, from prepare
    r = api.post("/v1/memories", json={"content": "x", "metadata": _deep(20)}, headers=headers)
    assert _loc(r) == ["body", "metadata"] and "at most" in r.json()["detail"][0]["msg"]
    _untouched(api, headers, kept)


def _job(tenant: str, memory_id: str, content: str) -> IngestJob:
    item = MemoryItem(memory_id=memory_id, content=content)
    return IngestJob(task_id=uuid.uuid4().hex, tenant_id=tenant, items=[item], version=time.time_ns() // 1000)


def _in_redis(settings: Any, task_id: str, timeout_s: float) -> bool:
    import redis

    from brain_search.ingest.broker import queue_keys
    from brain_search.ingest.reconcile import present_task_ids

    assert settings.redis_url
    r = redis.Redis.from_url(settings.redis_url, socket_timeout=5)
    prefix = settings.index_prefix
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if task_id in present_task_ids(r, queue_keys(settings), f"{prefix}:unacked"):
                return True
            time.sleep(0.2)
        return False
    finally:
        r.close()


def test_a_job_that_cannot_be_sent_never_holds_the_outbox_or_the_reconciler(queue, wsettings, client) -> None:
    """Item 1, the queue side: the queue refuses such a job before accepting it; one already in
    the outbox (or kept in a record) is given up, its record ``failed``, and the jobs behind it
    are queued (before: it sat at the head of the outbox for good, every later write behind it,
    and the reconcile pass failed every time for every tenant)."""
    from brain_search.ingest.broker import INGEST_TASK, ingest_queue
    from brain_search.ingest.reconcile import reconcile
    from brain_search.ingest.signing import job_kwargs

    bad, good = _job("t", "b1", "bad \ud800"), _job("t", "g1", "good")
    queue.records.create(bad)
    queue._defer(bad, ingest_queue(wsettings))  # as a job from before the door refused it would be
    queue._open_until = time.monotonic() + 3  # Redis "just failed": the good job waits in the outbox too
    queue.submit(good)
    assert queue.outbox_size == 2
    assert _in_redis(wsettings, good.task_id, 15), "the good job stayed behind the bad one"
    assert queue.outbox_size == 0
    assert queue.records.get("t", bad.task_id).state is TaskState.failed
    with pytest.raises(InvalidInput, match="cannot be queued"):  # and a new one is refused before it is accepted
        queue.submit(_job("t", "b0", "bad \ud800"))

    # the reconcile pass: a lost bad job first, then a lost good one; both records stale
    bad2, good2 = _job("t", "b2", "bad \ud800"), _job("t", "g2", "good")
    queue.records.create(bad2)
    queue.records.create(good2)
    client.indices.refresh(index=queue.records.index)
    time.sleep(0.05)

    def requeue(job: IngestJob) -> None:
        queue.app.send_task(
            INGEST_TASK, kwargs=job_kwargs(job, queue.signing_keys), task_id=job.task_id, queue=ingest_queue(wsettings)
        )

    stale = [c for c in queue.records.stale_unfinished(0.0) if c[0] in (bad2.task_id, good2.task_id)]
    assert [task_id for task_id, _ in stale] == [bad2.task_id, good2.task_id]
    assert reconcile(lambda: stale, lambda: set(), requeue, queue.records.failed) == 1
    assert _in_redis(wsettings, good2.task_id, 5)
    status = queue.records.get("t", bad2.task_id)
    assert status.state is TaskState.failed and status.error and "not queued" in status.error


def test_a_piece_id_with_another_digit_and_time_words_past_the_calendar_are_422s(api, make_tenant) -> None:
    """Issue 66 item 7: a memory id ``doc#²`` (``int('²')``) and a recall reading time words
    against a reference time in year 9999 ("year 10000 is out of range") were 500s."""
    acme = make_tenant("acme")
    for memory_id in ("doc#²", "doc#٣", "doc#¹⁰"):
        body = {"content": "a piece", "memory_id": memory_id, "metadata": {"chunk_of": "doc", "chunk_index": 2}}
        r = api.post("/v1/memories", json=body, headers=acme)
        assert r.status_code == 422, r.text
        assert "memory_id" in r.text
    for when in ("9999-12-31T00:00:00Z", "0001-01-01T06:00:00Z"):
        body = {"query": "what did we decide this year?", "time_words": True, "reference_time": when}
        r = api.post("/v1/recall", json=body, headers=acme)
        assert r.status_code == 422, r.text
        assert r.json()["detail"][0]["loc"] == ["body", "reference_time"], r.text
    ok = api.post(
        "/v1/recall",
        json={"query": "what did we decide last week?", "time_words": True, "reference_time": "9999-06-01T00:00:00Z"},
        headers=acme,
    )
    assert ok.status_code == 200, ok.text


def test_records_whose_payload_does_not_open_never_hold_the_reconcile_window(queue, wsettings, client) -> None:  # type: ignore[no-untyped-def]
    """Issue 66 (a code read): the reconciler reads the oldest unfinished records, and one whose
    payload does not open (another key, junk) was skipped and stayed unfinished, so enough of them
    kept a lost job out of every pass for good. Now each is given up (its record ends failed)."""
    from brain_search.ingest.reconcile import reconcile

    index = queue.records.index
    for i in range(3):  # older than any real task, payloads no key of this deployment opens
        doc = {
            "tenant_id": "t",
            "state": "queued",
            "updated_at": f"2020-01-0{i + 1}T00:00:00+00:00",
            "expires_at": "2999-01-01T00:00:00+00:00",
            "payload": "not a sealed payload" if i else None,
        }
        client.index(index=index, id=f"junk{i}", body=doc)
    lost = _job("t", "g9", "a lost but good job")
    queue.records.create(lost)
    client.indices.refresh(index=index)
    time.sleep(0.05)
    queued: list[str] = []
    passes = 0
    while not queued:
        passes += 1
        assert passes <= 3, "the junk records hold the window"
        window = [
            c for c in queue.records.stale_unfinished(0.0, limit=2) if c[0].startswith("junk") or c[0] == lost.task_id
        ]
        reconcile(lambda w=window: w, lambda: set(), lambda job: queued.append(job.task_id), queue.records.failed)
        client.indices.refresh(index=index)
    assert queued == [lost.task_id]
    for i in range(3):
        record = client.get(index=index, id=f"junk{i}")["_source"]
        assert record["state"] == "failed" and "does not open" in record["error"], record
