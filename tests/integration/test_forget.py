"""Forget by filter on the real stack: counts, what stays, the whole-tenant guard, and a stale
write that cannot bring a forgotten memory back."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.models import IngestJob, MemoryItem
from tests.integration.ingest_support import memory_ids, wait_task

pytestmark = pytest.mark.integration


def _wait_forget(api: Any, headers: dict[str, str], task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        body: dict[str, Any] = api.get(f"/v1/forget/{task_id}", headers=headers).json()
        if body["state"] != "running":
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def test_forget_a_conversation_then_everything(api, make_tenant, client, stack_settings) -> None:
    acme, other = make_tenant("acme"), make_tenant("other")
    state = api.app.state.brain
    batch = [
        {"content": f"chat {c} turn {i}", "memory_id": f"{c}-{i}", "conversation_id": c, "source": "chat"}
        for c in ("c1", "c2")
        for i in range(30)
    ]
    batch.append({"content": "a note " + "long text " * 200, "memory_id": "note", "conversation_id": "c1"})
    r = api.post("/v1/memories", json={"memories": batch, "chunk": True, "refresh": True}, headers=acme)
    task = wait_task(api, acme, r.json()["task_id"])
    pieces = task["indexed"] - 60
    assert pieces > 1
    r = api.post(
        "/v1/memories", json={"content": "other's chat", "conversation_id": "c1", "refresh": True}, headers=other
    )
    wait_task(api, other, r.json()["task_id"])
    put = api.put(
        "/v1/memories/c1-0",
        json={"content": "chat c1 turn 0, edited", "conversation_id": "c1", "refresh": True},
        headers=acme,
    )
    wait_task(api, acme, put.json()["task_id"])
    state.ingest.dead_letters.add(
        "acme", "t0", [(MemoryItem(memory_id="c1-5", content="x"), ItemOutcome("c1-5", False, reason="r"))], 1
    )
    old_write = IngestJob(
        task_id="stale",
        tenant_id="acme",
        items=[MemoryItem(memory_id="c1-7", content="old", conversation_id="c1")],
        version=1,
    )

    # the guard: no filter is the whole tenant
    guard = api.post("/v1/forget", json={}, headers=acme)
    assert guard.status_code == 422 and guard.json()["detail"][0]["loc"][-1] == "all"
    assert api.post("/v1/forget", json={"node": "nope"}, headers=acme).status_code == 422

    started = api.post("/v1/forget", json={"conversation_id": "c1"}, headers=acme)
    assert started.status_code == 202, started.text
    done = _wait_forget(api, acme, started.json()["task_id"])
    assert (done["state"], done["memories"], done["history"], done["dead_letters"]) == (
        "succeeded",
        30 + pieces,
        1,
        1,
    ), done
    left = memory_ids(client, stack_settings, "acme")
    assert sorted(left) == sorted(f"c2-{i}" for i in range(30))
    assert len(memory_ids(client, stack_settings, "other")) == 1  # another tenant's c1 is untouched
    assert api.get(f"/v1/forget/{started.json()['task_id']}", headers=other).status_code == 404
    # an older write of a forgotten memory, arriving late, does not bring it back
    state.ingest.queue.submit(old_write)
    assert wait_task(api, acme, "stale")["superseded"] == 1
    assert api.get("/v1/memories/c1-7", headers=acme).status_code == 404

    everything = _wait_forget(api, acme, api.post("/v1/forget", json={"all": True}, headers=acme).json()["task_id"])
    assert everything["state"] == "succeeded" and everything["memories"] == 30
    assert memory_ids(client, stack_settings, "acme") == []
    assert len(memory_ids(client, stack_settings, "other")) == 1


def test_erasing_a_tenant_leaves_nothing_of_it_in_any_index(api, make_tenant, client, stack_settings) -> None:
    from brain_search.store.indices import IndexNames
    from brain_search.tenancy.erase import count_everywhere, finish_erase
    from tests.conftest import ADMIN_KEY

    acme, other = make_tenant("acme"), make_tenant("other")
    state = api.app.state.brain
    state.graph.create("acme", "Work/Launch")
    r = api.post(
        "/v1/memories",
        json={
            "memories": [
                {"content": "launch notes " * 150, "memory_id": "doc", "node_id": "Work/Launch"},
                {"content": "the launch is in March", "memory_id": "m1"},
                {"content": "to be deleted", "memory_id": "m2"},
            ],
            "chunk": True,
            "refresh": True,
        },
        headers=acme,
    )
    wait_task(api, acme, r.json()["task_id"])
    put = api.put("/v1/memories/m1", json={"content": "the launch moved to May", "refresh": True}, headers=acme)
    wait_task(api, acme, put.json()["task_id"])  # a history entry
    assert api.delete("/v1/memories/m2", headers=acme).status_code == 204  # a tombstone
    item = MemoryItem(memory_id="bad", content="x")
    state.ingest.dead_letters.add("acme", "t0", [(item, ItemOutcome("bad", False, reason="r"))], 1)
    forgot = api.post("/v1/forget", json={"source": "nothing-matches"}, headers=acme).json()
    _wait_forget(api, acme, forgot["task_id"])  # a forget task record
    r = api.post("/v1/memories", json={"content": "other's", "refresh": True}, headers=other)
    wait_task(api, other, r.json()["task_id"])
    before = count_everywhere(client, stack_settings, "acme")
    assert sum(before.values()) > 10, before

    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    erased = api.delete("/v1/admin/tenants/acme", headers=admin)
    assert erased.status_code == 200, erased.text
    after = count_everywhere(client, stack_settings, "acme")
    assert all(n == 0 for n in after.values()), after  # every index of the prefix, counted
    assert api.post("/v1/recall", json={"query": "launch"}, headers=acme).status_code == 401  # its key is gone
    assert api.delete("/v1/admin/tenants/acme", headers=admin).status_code == 404
    assert sum(count_everywhere(client, stack_settings, "other").values()) >= 3  # tenant, key, memory, task
    assert api.post("/v1/recall", json={"query": "other"}, headers=other).status_code == 200

    # the id stays taken until the second pass (a running task may still write); then it is free
    again = api.post("/v1/admin/tenants", json={"tenant_id": "acme"}, headers=admin)
    assert again.status_code == 409 and "being erased" in again.text, again.text
    tenants = IndexNames.of(stack_settings).tenants
    overdue = {"doc": {"second_pass_at": "2000-01-01T00:00:00+00:00"}}  # as if its API had restarted
    client.update(index=tenants, id="acme", body=overdue, params={"refresh": "true"})
    assert api.post("/v1/admin/tenants", json={"tenant_id": "acme"}, headers=admin).status_code == 201
    reborn = {
        "Authorization": f"Bearer {api.post('/v1/admin/tenants/acme/keys', json={}, headers=admin).json()['key']}"
    }
    r = api.post("/v1/memories", json={"content": "a new acme", "memory_id": "n1", "refresh": True}, headers=reborn)
    wait_task(api, reborn, r.json()["task_id"])
    # the first erase's timer, when it fires, finds no marker of its own and deletes nothing
    marker_id = "the-first-erase"
    assert finish_erase(client, stack_settings, "acme", marker_id) is False
    assert api.get("/v1/memories/n1", headers=reborn).status_code == 200


def test_cli_forget(live_api, api, make_tenant, client, stack_settings) -> None:
    from typer.testing import CliRunner

    from brain_search.commands.cli import app

    acme = make_tenant("acme")
    batch = [
        {"content": f"turn {i}", "memory_id": f"k{i}", "conversation_id": "c9" if i < 3 else "c8"} for i in range(5)
    ]
    wait_task(
        api, acme, api.post("/v1/memories", json={"memories": batch, "refresh": True}, headers=acme).json()["task_id"]
    )
    env = {"BRAIN_API_URL": live_api, "BRAIN_API_KEY": acme["Authorization"].removeprefix("Bearer ")}
    runner = CliRunner()
    guard = runner.invoke(app, ["forget"], env=env)
    assert guard.exit_code == 1 and "all" in guard.output, guard.output
    done = runner.invoke(app, ["forget", "--conversation", "c9"], env=env)
    assert done.exit_code == 0 and "succeeded (3 memories" in done.output, done.output
    assert sorted(memory_ids(client, stack_settings, "acme")) == ["k3", "k4"]


def test_a_forget_finds_what_was_indexed_a_moment_ago(api, make_tenant, client, stack_settings) -> None:
    """Issue 54 item 11: the forget refreshes before it searches (here no refresh would ever come)."""
    acme = make_tenant("acme")
    alias = stack_settings.memories_alias
    client.indices.put_settings(index=alias, body={"index": {"refresh_interval": "-1"}})
    try:
        r = api.post(
            "/v1/memories", json={"content": "just said", "memory_id": "m1", "conversation_id": "c1"}, headers=acme
        )
        assert wait_task(api, acme, r.json()["task_id"])["state"] == "succeeded"
        started = api.post("/v1/forget", json={"conversation_id": "c1"}, headers=acme)
        done = _wait_forget(api, acme, started.json()["task_id"])
    finally:
        client.indices.put_settings(index=alias, body={"index": {"refresh_interval": None}})
    assert (done["state"], done["memories"]) == ("succeeded", 1), done
    assert memory_ids(client, stack_settings, "acme") == []
    assert api.get("/v1/memories/m1", headers=acme).status_code == 404


def test_forget_all_keeps_what_was_accepted_after_it_began(worker_api, workers, wsettings, client) -> None:
    """Issue 54 item 11: ``all: true`` removes the task records, history and memories from before
    it, not a write accepted after it began (its record, memory and history stay)."""
    from brain_search.ingest.forget import ForgetRequest, ForgetStatus
    from tests.integration.ingest_support import tenant_headers

    workers("w1")
    api = worker_api
    acme = tenant_headers(api, "acme")
    ingest = api.app.state.brain.ingest
    before = api.post("/v1/memories", json={"content": "old", "memory_id": "old", "refresh": True}, headers=acme)
    wait_task(api, acme, before.json()["task_id"])
    # the forget begins (its version and start time) ...
    version, status = ingest.versions.next(), ForgetStatus(task_id="forget_t", created_at=datetime.now(UTC))
    time.sleep(0.01)
    # ... a write is accepted meanwhile, and edited (a history entry of a version after the forget) ...
    after = api.post("/v1/memories", json={"content": "new", "memory_id": "new", "refresh": True}, headers=acme)
    wait_task(api, acme, after.json()["task_id"])
    put = api.put("/v1/memories/new", json={"content": "newer", "refresh": True}, headers=acme)
    wait_task(api, acme, put.json()["task_id"])
    # ... then the forget runs
    done = ingest.forgetter.run("acme", ForgetRequest(all=True), None, version, status=status)
    assert (done.state, done.memories, done.task_records) == ("succeeded", 1, 1), done
    assert memory_ids(client, wsettings, "acme") == ["new"]
    assert api.get(f"/v1/tasks/{before.json()['task_id']}", headers=acme).status_code == 404
    for task in (after, put):
        assert api.get(f"/v1/tasks/{task.json()['task_id']}", headers=acme).status_code == 200
    history = api.get("/v1/memories/new/history", headers=acme).json()["versions"]
    assert [h["memory"]["content"] for h in history] == ["new"]


def test_an_erase_whose_api_died_is_finished_by_another(api, make_tenant, client, stack_settings) -> None:
    """Issue 54 item 11: the erase's second pass no longer hangs on the timer of the API that
    started it: any API's sweep finishes an overdue erase (what a task wrote after the first pass
    goes, then the marker)."""
    from brain_search.store.documents import memory_doc_id
    from brain_search.store.indices import IndexNames
    from brain_search.tenancy.erase import count_everywhere
    from tests.conftest import ADMIN_KEY

    make_tenant("acme")
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    assert api.delete("/v1/admin/tenants/acme", headers=admin).status_code == 200
    late = {"tenant_id": "acme", "memory_id": "late", "content": "written by a task after the first pass"}
    client.index(
        index=stack_settings.memories_alias,
        id=memory_doc_id("acme", "late"),
        body=late,
        params={"routing": "acme", "refresh": "true"},
    )
    tenants = IndexNames.of(stack_settings).tenants
    overdue = {"doc": {"second_pass_at": "2000-01-01T00:00:00+00:00"}}  # its API was killed: no timer will fire
    client.update(index=tenants, id="acme", body=overdue, params={"refresh": "true"})
    deadline = time.monotonic() + 30
    while client.get(index=tenants, id="acme", ignore=[404]).get("found"):
        assert time.monotonic() < deadline, "the overdue erase was not finished"
        time.sleep(0.5)
    assert all(n == 0 for n in count_everywhere(client, stack_settings, "acme").values())
