"""Issue 66: moves and deletes that lose nothing, each reproduction of the issue on the real stack.

1. two `tenant-index` runs of one tenant: the second is refused while the first holds the move's
   lease; a run stopped (SIGSTOP) past its lease is taken over, and when it is continued it stops
   without touching anything;
2. an edit queued across a swap lands in the new index;
3. a grace shorter than the placement cache is refused, and writes through a second API during a
   move with the shortest grace are all kept;
4. `reindex` refuses while a tenant move is unfinished;
5. erase, forget and delete reach the index kept for rollback;
6. a cascading node delete reaches a memory written a moment before it and a write still queued.

The race of two moves against two APIs, with kill points, is ``test_move_race.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.base import encoder_info
from brain_search.encoders.factory import make_document_embedder
from brain_search.index_names import IndexNames
from brain_search.ingest.forget import ForgetRequest
from brain_search.ingest.models import MemoryItem
from brain_search.ingest.modes import embedded_service
from brain_search.ingest.service import IngestService
from brain_search.store.client import make_client
from brain_search.store.index_move import IndexMove
from brain_search.store.indices import install_all
from brain_search.store.moves import MIN_GRACE_S
from brain_search.store.placement import tenant_index
from brain_search.store.scope import tenant_documents
from brain_search.store.templates import delete_indices
from brain_search.store.tenant_move import TenantMove
from brain_search.tenancy.auth import KeyStore
from brain_search.tenancy.erase import count_everywhere, erase_tenant
from tests.integration.ingest_support import kill_move_mid_copy, wait_task, worker_env
from tests.integration.test_delete_wins import held

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

TENANT, OTHER = "acme", "stayer"


def _settings(stack_settings: Settings, suffix: str, **update: Any) -> Settings:
    s = stack_settings.model_copy(update={"index_prefix": f"{stack_settings.index_prefix}-{suffix}", **update})
    client = make_client(s)
    delete_indices(client, s)
    install_all(client, s)
    keys = KeyStore(client, s)
    for t in (TENANT, OTHER):
        keys.create_tenant(t)
    return s


def _write(svc: IngestService, tenant: str, items: dict[str, str], **fields: Any) -> None:
    memories = [MemoryItem(memory_id=k, content=v, **fields) for k, v in items.items()]
    job = svc.write(tenant, memories, refresh=True)
    status = svc.wait(tenant, job.task_id, 120)
    assert status.state.value == "succeeded" and status.indexed == len(items), status


def _live(client: OpenSearch, index: str, tenant: str) -> dict[str, str]:
    """memory id → content of the tenant's live memories in ``index`` (each id once)."""
    client.indices.refresh(index=index)
    body = {"query": tenant_documents(tenant), "size": 10_000, "_source": ["memory_id", "content", "tenant_id"]}
    hits = client.search(index=index, body=body, params={"routing": tenant})["hits"]["hits"]
    docs = [h["_source"] for h in hits if h["_source"].get("tenant_id") == tenant]
    assert len(docs) == len({d["memory_id"] for d in docs}), "a memory is there twice"
    return {d["memory_id"]: d["content"] for d in docs}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "brain_search.commands.cli", *args]


def _until_line(proc: subprocess.Popen[bytes], marker: str, timeout_s: float = 300) -> str:
    """Read ``proc``'s output until a line holds ``marker``; returns what was read."""
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + timeout_s
    while marker not in seen:
        line = proc.stdout.readline().decode()
        assert line or proc.poll() is None, seen
        seen += line
        assert time.monotonic() < deadline, seen
    return seen


# ---------------------------------------------------------------------------------- item 1
def test_a_second_run_of_a_move_is_refused_and_loses_nothing(client: OpenSearch, stack_settings: Settings) -> None:
    """The issue's reproduction: `tenant-index acme --grace-s 30 &`, and during its grace a second
    `tenant-index acme --grace-s 90`. Before the lease, the second "resumed" and its clean-up
    deleted all 50 copies; now it is refused, naming the holder."""
    s = _settings(stack_settings, "mo1")
    names = IndexNames.of(s)
    svc = embedded_service(s, client, make_document_embedder(s))
    expected = {f"m{i}": f"Memory {i} of acme: the harbour plan, step {i}." for i in range(50)}
    _write(svc, TENANT, expected)
    env = worker_env(s)
    first = subprocess.Popen(
        _cli("tenant-index", TENANT, "--grace-s", "30"), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    _until_line(first, "grace")
    second = subprocess.run(
        _cli("tenant-index", TENANT, "--grace-s", "90"), env=env, capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 1, second.stdout + second.stderr
    assert "another move runs" in second.stdout and f"tenant:{TENANT} is held by" in second.stdout, second.stdout
    out, _ = first.communicate(timeout=300)
    assert first.returncode == 0, out.decode()
    own = tenant_index(names, TENANT)
    assert _live(client, own, TENANT) == expected
    assert _live(client, s.memories_alias, TENANT) == {}
    again = subprocess.run(
        _cli("tenant-index", TENANT, "--grace-s", "90"), env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0 and "already has its own index" in again.stdout, again.stdout + again.stderr
    assert _live(client, own, TENANT) == expected
    svc.close()
    delete_indices(client, s)


def test_a_stopped_move_is_taken_over_and_stops_when_continued(client: OpenSearch, stack_settings: Settings) -> None:
    """A run SIGSTOPped in its grace keeps its lease until it runs out (6 s here); a second run
    then takes over from the phase the record holds and finishes. Continued, the first run finds
    it lost the lease and exits 1 before its next step: nothing lost, the record still "done"."""
    s = _settings(stack_settings, "mo2", move_lease_s=6.0)
    names = IndexNames.of(s)
    svc = embedded_service(s, client, make_document_embedder(s))
    expected = {f"b{i}": f"Memory {i} of acme: the bakery order for day {i}." for i in range(50)}
    _write(svc, TENANT, expected)
    env = worker_env(s)
    first = subprocess.Popen(
        _cli("tenant-index", TENANT, "--grace-s", "8"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _until_line(first, "grace")
    os.killpg(first.pid, signal.SIGSTOP)
    try:
        refused = subprocess.run(
            _cli("tenant-index", TENANT, "--grace-s", "4"), env=env, capture_output=True, text=True, timeout=120
        )
        assert refused.returncode == 1 and "another move runs" in refused.stdout, refused.stdout + refused.stderr
        time.sleep(7)  # the stopped run's lease runs out
        second = subprocess.run(
            _cli("tenant-index", TENANT, "--grace-s", "4"), env=env, capture_output=True, text=True, timeout=300
        )
        assert second.returncode == 0, second.stdout + second.stderr
        assert "resumed" in second.stdout
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    out, _ = first.communicate(timeout=120)
    assert first.returncode == 1, out.decode()
    assert "lost the lease" in out.decode(), out.decode()
    own = tenant_index(names, TENANT)
    assert _live(client, own, TENANT) == expected
    assert _live(client, s.memories_alias, TENANT) == {}
    mapping = client.indices.get_mapping(index=own)[own]["mappings"]["_meta"]["move"]
    assert mapping["phase"] == "done", mapping
    svc.close()
    delete_indices(client, s)


# ---------------------------------------------------------------------------------- item 2
def test_an_edit_queued_across_a_swap_lands(worker_api, workers, wsettings: Settings, client: OpenSearch) -> None:  # type: ignore[no-untyped-def]
    """POST m1 "old"; workers stopped; PATCH m1 "new" (202); the tenant moves; workers start: the
    task says indexed 1, and m1 reads "new". Before, the edit's claim (a sequence number of the
    old index) made it "superseded" in the new one."""
    from tests.integration.ingest_support import tenant_headers

    headers = tenant_headers(worker_api, TENANT)
    w1 = workers("w1")
    r = worker_api.post("/v1/memories", json={"content": "old", "memory_id": "m1", "refresh": True}, headers=headers)
    assert wait_task(worker_api, headers, r.json()["task_id"])["indexed"] == 1
    for i in range(8):  # m1's sequence number in the old index moves well past any in the new one
        assert worker_api.patch("/v1/memories/m1", json={"source": f"s{i}"}, headers=headers).status_code == 200
    w1.stop()
    patch = worker_api.patch("/v1/memories/m1", json={"content": "new", "refresh": True}, headers=headers)
    assert patch.status_code == 202, patch.text
    TenantMove(client, wsettings, TENANT, grace_s=MIN_GRACE_S).run()
    workers("w2")
    done = wait_task(worker_api, headers, patch.json()["task_id"])
    assert (done["state"], done["indexed"], done["superseded"]) == ("succeeded", 1, 0), done
    got = worker_api.get("/v1/memories/m1", headers=headers).json()
    assert got["content"] == "new" and got["version"] == patch.json()["version"], got
    assert _live(client, tenant_index(IndexNames.of(wsettings), TENANT), TENANT)["m1"] == "new"
    assert _live(client, wsettings.memories_alias, TENANT) == {}


# ---------------------------------------------------------------------------------- item 3
def test_a_grace_shorter_than_the_placement_cache_is_refused(client: OpenSearch, stack_settings: Settings) -> None:
    s = _settings(stack_settings, "mo3")
    r = subprocess.run(
        _cli("tenant-index", TENANT, "--grace-s", "0"), env=worker_env(s), capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 1 and "--grace-s 0 is shorter than the 4 s" in r.stdout, r.stdout + r.stderr
    assert not client.indices.exists(index=tenant_index(IndexNames.of(s), TENANT))
    delete_indices(client, s)


def test_writes_through_a_second_api_during_a_move_are_all_kept(client: OpenSearch, stack_settings: Settings) -> None:
    """200 single writes through a second API (its own placement cache) while the tenant moves
    with the shortest grace: every write whose task succeeded is listed afterwards (28 of 200
    were lost with `--grace-s 0`)."""
    s = _settings(stack_settings, "mo4")
    names = IndexNames.of(s)
    svc = embedded_service(s, client, make_document_embedder(s))
    seeded = {f"s{i}": f"Seeded note {i} about the orchard." for i in range(100)}
    _write(svc, TENANT, seeded)
    replica_client = make_client(s)
    replica = embedded_service(s, replica_client, make_document_embedder(s))
    acknowledged: dict[str, str] = {}
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while i < 200:
            content = f"Written during the move through the second API, number {i}."
            job = replica.write(TENANT, [MemoryItem(memory_id=f"w{i}", content=content)], refresh=False)
            status = replica.wait(TENANT, job.task_id, 60)
            if status.state.value == "succeeded" and status.indexed == 1:
                acknowledged[f"w{i}"] = content
            i += 1
            if stop.is_set() and i >= 200:
                break

    t = threading.Thread(target=writer)
    t.start()
    TenantMove(client, s, TENANT, grace_s=MIN_GRACE_S).run()
    stop.set()
    t.join(300)
    assert len(acknowledged) == 200
    live = _live(client, tenant_index(names, TENANT), TENANT)
    missing = set(acknowledged) - set(live)
    assert not missing, f"{len(missing)} acknowledged writes lost: {sorted(missing)[:5]}"
    assert {k: live[k] for k in seeded} == seeded
    assert _live(client, s.memories_alias, TENANT) == {}
    for x in (svc, replica):
        x.close()
    replica_client.close()
    delete_indices(client, s)


# ---------------------------------------------------------------------------------- item 4
def test_reindex_refuses_while_a_tenant_move_is_unfinished(client: OpenSearch, stack_settings: Settings) -> None:
    """A `tenant-index` killed mid-copy, then `reindex`: refused, naming the tenant (before, it ran,
    and the resumed tenant move copied from the old index). The tenant move then resumes whole."""
    s = _settings(stack_settings, "mo5")
    names = IndexNames.of(s)
    svc = embedded_service(s, client, make_document_embedder(s))
    expected = {f"k{i}": f"Memory {i} about the trip to Kyoto, day {i % 7}." for i in range(800)}
    _write(svc, TENANT, expected)
    env = worker_env(s)
    move = _cli("tenant-index", TENANT, "--grace-s", "4")
    kill_move_mid_copy(move, env)
    reindex = subprocess.run(
        _cli("reindex", "--encoder", s.embedding_model, "--grace-s", "4"),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert reindex.returncode == 1, reindex.stdout + reindex.stderr
    assert "unfinished" in reindex.stdout and TENANT in reindex.stdout, reindex.stdout
    assert next(iter(client.indices.get_alias(name=s.memories_alias))).endswith("-v1")
    _write(svc, TENANT, {"late": "Written between the kill and the resumed move."})
    svc.delete(TENANT, "k1")
    done = subprocess.run(move, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    expected["late"] = "Written between the kill and the resumed move."
    del expected["k1"]
    assert _live(client, tenant_index(names, TENANT), TENANT) == expected
    assert _live(client, s.memories_alias, TENANT) == {}
    svc.close()
    delete_indices(client, s)


# ---------------------------------------------------------------------------------- item 5
def test_erase_forget_and_delete_reach_the_rollback_index(client: OpenSearch, stack_settings: Settings) -> None:
    """After a `reindex`, the index kept for rollback still held an erased tenant's memories in
    full. Now a forget, a delete and an erase reach it, and another tenant's copies stay."""
    s = _settings(stack_settings, "mo6")
    names = IndexNames.of(s)
    svc = embedded_service(s, client, make_document_embedder(s))
    secrets = {f"p{i}": f"my bank PIN hint {i} and passport number X{i}" for i in range(20)}
    _write(svc, TENANT, secrets, conversation_id="c1")
    _write(svc, TENANT, {"q0": "The quarterly report is due Friday."}, conversation_id="c2")
    _write(svc, OTHER, {"o0": "The other tenant's passport renewal."})
    old = next(iter(client.indices.get_alias(name=s.memories_alias)))
    info = encoder_info(s.embedding_model)
    IndexMove(client, s, info, make_document_embedder(s), grace_s=MIN_GRACE_S).run()
    assert len(_live(client, old, TENANT)) == 21  # kept for rollback

    svc.delete(TENANT, "q0")
    assert "q0" not in _live(client, old, TENANT)
    status = svc.forget(TENANT, ForgetRequest(conversation_id="c1"), _NoNodes())
    deadline = time.monotonic() + 60
    while svc.forgetter.status(TENANT, status.task_id).state == "running":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    final = svc.forgetter.status(TENANT, status.task_id)
    assert (final.state, final.memories, final.copies) == ("succeeded", 20, 20), final
    assert _live(client, old, TENANT) == {}

    _write(svc, TENANT, {"n0": "Written after the forget."})
    client.index(  # a copy the rollback index still holds (as a killed move would leave one)
        index=old,
        id="leftover",
        body={"tenant_id": TENANT, "memory_id": "leftover", "content": "left in the old index"},
        params={"routing": TENANT, "refresh": "true"},
    )
    deleted = erase_tenant(client, s, KeyStore(client, s), TENANT)
    assert deleted.get(old) == 1, deleted
    assert not any(count_everywhere(client, s, TENANT).values())
    assert (
        _live(client, old, OTHER)
        == _live(client, s.memories_alias, OTHER)
        == {"o0": "The other tenant's passport renewal."}
    )
    assert names.memories_alias not in deleted  # every count names the index it was made in
    svc.close()
    delete_indices(client, s)


class _NoNodes:
    def get(self, tenant_id: str, ref: str) -> Any:
        raise AssertionError("no node in this test")


# ---------------------------------------------------------------------------------- item 6
def test_a_cascade_reaches_a_memory_written_a_moment_before_and_a_queued_write(api, make_tenant) -> None:  # type: ignore[no-untyped-def]
    """POST with create_nodes, task succeeded, cascade 20 ms later: the memory was left (3 of 3
    tries), under a node that no longer exists. A write still queued under the node landed after.
    Now both are gone, and the cascade's counts say so."""
    acme = make_tenant("acme")
    state = api.app.state.brain
    for attempt in range(3):
        node_label = f"Trips/Lisbon{attempt}"
        r = api.post(
            "/v1/memories",
            json={
                "content": f"Lisbon trip {attempt}: the tram 28 tickets",
                "node_id": node_label,
                "create_nodes": True,
            },
            headers=acme,
        )
        wait_task(api, acme, r.json()["task_id"])
        node = api.get("/v1/nodes", params={"label": node_label}, headers=acme).json()["nodes"][0]
        with held(state) as gate:  # a write of a new memory under the node, accepted before the delete
            queued = api.post(
                "/v1/memories",
                json={
                    "content": f"queued note {attempt} about Lisbon",
                    "memory_id": f"q{attempt}",
                    "node_id": node_label,
                },
                headers=acme,
            )
            assert queued.status_code == 202 and gate.waiting.wait(60)
            d = api.delete(f"/v1/nodes/{node['id']}", params={"cascade": "true"}, headers=acme)
            assert d.status_code in (200, 202), d.text
            assert d.json()["memories"] == 1, d.json()
            task_id = d.json()["task"]["task_id"]
            deadline = time.monotonic() + 60
            while (t := api.get(f"/v1/nodes/tasks/{task_id}", headers=acme).json())["state"] == "running":
                assert time.monotonic() < deadline, t
                time.sleep(0.1)
            assert (t["state"], t["deleted"]) == ("completed", 1), t
        done = wait_task(api, acme, queued.json()["task_id"])
        assert (done["indexed"], done["superseded"]) == (0, 1), done
    listed = api.get("/v1/memories", headers=acme).json()["memories"]
    assert listed == [], listed
    hits = api.post("/v1/recall", json={"query": "Lisbon tram tickets"}, headers=acme).json()["results"]
    assert hits == [], hits


def test_edits_and_fences_cover_text_patches(api, make_tenant) -> None:  # type: ignore[no-untyped-def]
    """A forget by conversation covers a text edit still queued for a memory of it (superseded),
    and leaves an edit of another conversation alone."""
    acme = make_tenant("acme")
    state = api.app.state.brain
    for m, conv in (("e1", "c1"), ("e2", "c2")):
        r = api.post(
            "/v1/memories",
            json={"content": f"draft {m}", "memory_id": m, "conversation_id": conv, "refresh": True},
            headers=acme,
        )
        wait_task(api, acme, r.json()["task_id"])
    with held(state) as gate:
        edits = [
            api.patch(f"/v1/memories/{m}", json={"content": f"final {m}", "refresh": True}, headers=acme)
            for m in ("e1", "e2")
        ]
        assert all(e.status_code == 202 for e in edits) and gate.waiting.wait(60)
        forget = api.post("/v1/forget", json={"conversation_id": "c1"}, headers=acme).json()
        deadline = time.monotonic() + 60
        while api.get(f"/v1/forget/{forget['task_id']}", headers=acme).json()["state"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert wait_task(api, acme, edits[0].json()["task_id"])["superseded"] == 1
    assert wait_task(api, acme, edits[1].json()["task_id"])["indexed"] == 1
    assert api.get("/v1/memories/e1", headers=acme).status_code == 404
    assert api.get("/v1/memories/e2", headers=acme).json()["content"] == "final e2"
