"""Order and deletes on real processes: a deleted memory stays deleted, a stale write never wins.

The worker tests pause the real `brain-search worker` processes with SIGSTOP (so the write is still
queued when the DELETE arrives), then resume them with SIGCONT.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.ingest.broker import queue_keys
from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.ingest.versions import VersionClock
from tests.integration.ingest_support import (
    WorkerProcess,
    broker_state,
    memory_ids,
    tenant_headers,
    wait_celery_tasks,
    wait_task,
)
from tests.integration.signals import stop, stop_group

pytestmark = [pytest.mark.integration]

LONG = " ".join(f"Sentence {i} of the long design document about the memory service." for i in range(60))


@contextmanager
def paused(worker: WorkerProcess) -> Iterator[None]:
    """SIGSTOP the worker's whole process group (main process and pool), SIGCONT on exit."""
    assert worker.proc is not None
    stop_group(worker.proc.pid)
    try:
        yield
    finally:
        os.killpg(worker.proc.pid, signal.SIGCONT)


def _post(api: Any, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    r = api.post("/v1/memories", json=body, headers=headers)
    assert r.status_code == 202, r.text
    return r.json()


def _recall_ids(api: Any, headers: dict[str, str], query: str) -> list[str]:
    r = api.post("/v1/recall", json={"query": query, "limit": 20}, headers=headers)
    assert r.status_code == 200, r.text
    return [m["id"] for m in r.json()["results"]]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_delete_while_the_write_is_queued_holds(wsettings, workers, worker_api, client) -> None:
    """The issue's reproduction: pause the workers, POST m, DELETE m, resume: m never appears."""
    w1 = workers("w1")
    acme = tenant_headers(worker_api, "acme")
    with paused(w1):
        one = _post(worker_api, acme, {"content": "Jacob takes the CTO offer", "memory_id": "m1", "refresh": True})
        doc = _post(worker_api, acme, {"content": LONG, "memory_id": "doc", "chunk": True, "refresh": True})
        assert doc["submitted"] > 2  # a chunked memory: its pieces have their own ids
        for m in ("m1", "doc"):
            r = worker_api.delete(f"/v1/memories/{m}", headers=acme)
            assert r.status_code == 202, r.text  # accepted: not stored yet, and its write will not land
            assert r.json()["memory_id"] == m
        assert worker_api.delete("/v1/memories/never-posted", headers=acme).status_code == 404
    first = wait_task(worker_api, acme, one["task_id"], timeout_s=120)
    pieces = wait_task(worker_api, acme, doc["task_id"], timeout_s=120)
    assert (first["state"], first["indexed"], first["superseded"]) == ("succeeded", 0, 1), first
    assert (pieces["indexed"], pieces["superseded"]) == (0, doc["submitted"]), pieces
    assert worker_api.get("/v1/memories/m1", headers=acme).status_code == 404
    assert memory_ids(client, wsettings, "acme") == []
    assert _recall_ids(worker_api, acme, "Jacob CTO offer long design document") == []
    # a write accepted after the delete wins: the memory can be stored again
    again = _post(worker_api, acme, {"content": "Jacob takes the CTO offer", "memory_id": "m1", "refresh": True})
    assert wait_task(worker_api, acme, again["task_id"], timeout_s=120)["indexed"] == 1
    assert worker_api.get("/v1/memories/m1", headers=acme).status_code == 200


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_stale_write_or_redelivery_never_overwrites_a_newer_one(wsettings, workers, queue, client) -> None:
    workers("w1")
    clock = VersionClock()
    old_v, new_v = clock.next(), clock.next()
    run = uuid.uuid4().hex[:8]

    def job(task: str, content: str, version: int) -> IngestJob:
        item = MemoryItem(memory_id="m", content=content)
        return IngestJob(task_id=f"{task}-{run}", tenant_id="acme", items=[item], refresh=True, version=version)

    new = job("new", "the launch moved to May", new_v)
    old = job("old", "the launch is in March", old_v)
    queue.submit(new)
    wait_celery_tasks(queue, "acme", [new.task_id], timeout_s=120)
    queue.submit(old)  # an older task's retry landing late
    status = wait_celery_tasks(queue, "acme", [old.task_id], timeout_s=120)[old.task_id]
    assert (status.indexed, status.superseded) == (0, 1), status

    # the newer task redelivered (same message again): a no-op, not a conflict
    queue.submit(new)
    status = wait_celery_tasks(queue, "acme", [new.task_id], timeout_s=120)[new.task_id]
    assert (status.indexed, status.superseded) == (1, 0), status
    queue.submit(old.model_copy(update={"task_id": f"old-again-{run}"}))
    wait_celery_tasks(queue, "acme", [f"old-again-{run}"], timeout_s=120)

    client.indices.refresh(index=wsettings.memories_alias)
    hits = client.search(index=wsettings.memories_alias, body={"query": {"term": {"tenant_id": "acme"}}})["hits"]
    assert [h["_source"]["content"] for h in hits["hits"]] == ["the launch moved to May"]


def test_delete_removes_the_pieces_and_the_dead_letters(api, make_tenant, client, stack_settings: Settings) -> None:
    acme, other = make_tenant("acme"), make_tenant("other")
    state = api.app.state.brain
    doc = _post(api, acme, {"content": LONG, "memory_id": "doc", "chunk": True, "refresh": True})
    assert wait_task(api, acme, doc["task_id"])["indexed"] == doc["submitted"] > 2
    plain = _post(api, acme, {"content": "a plain memory", "memory_id": "plain", "refresh": True})
    wait_task(api, acme, plain["task_id"])
    piece = MemoryItem(memory_id="doc#0", content="x", metadata={"chunk_of": "doc"})
    reason = ItemOutcome("doc#0", False, reason="an earlier failure")
    state.ingest.dead_letters.add("acme", "t-old", [(piece, reason)], 1)
    state.ingest.dead_letters.add("acme", "t-old", [(MemoryItem(memory_id="plain", content="y"), reason)], 1)
    assert api.get("/v1/dead-letters", params={"memory_id": "doc"}, headers=acme).json()["total"] == 1

    assert api.delete("/v1/memories/doc", headers=other).status_code == 404  # another tenant's: unknown
    assert api.delete("/v1/memories/doc", headers=acme).status_code == 204
    assert sorted(memory_ids(client, stack_settings, "acme")) == ["plain"]
    assert api.get("/v1/memories/doc%230", headers=acme).status_code == 404
    assert api.get("/v1/dead-letters", params={"memory_id": "doc"}, headers=acme).json()["total"] == 0
    assert "doc#0" not in _recall_ids(api, acme, "long design document about the memory service")
    assert api.delete("/v1/memories/doc", headers=acme).status_code == 404  # already deleted

    # the purge route: another tenant purges nothing of acme's, acme purges its own
    assert api.delete("/v1/dead-letters", headers=other).json() == {"deleted": 0}
    assert api.delete("/v1/dead-letters", params={"task_id": "t-old"}, headers=acme).json() == {"deleted": 1}
    assert api.get("/v1/dead-letters", headers=acme).json()["total"] == 0
    assert api.delete("/v1/dead-letters", params={"before": "yesterday"}, headers=acme).status_code == 422


def test_tombstones_are_invisible_to_counts_and_expire(api, make_tenant, client, stack_settings: Settings) -> None:
    acme = make_tenant("acme")
    r = _post(api, acme, {"content": "to be forgotten", "memory_id": "gone", "refresh": True})
    wait_task(api, acme, r["task_id"])
    assert api.delete("/v1/memories/gone", headers=acme).status_code == 204
    alias = stack_settings.memories_alias
    client.indices.refresh(index=alias)
    assert client.count(index=alias, body={"query": {"term": {"tenant_id": "acme"}}})["count"] == 0
    assert client.count(index=alias, body={"query": {"term": {"tombstone_of": "acme"}}})["count"] == 1
    state = api.app.state.brain
    time.sleep(1.1)
    state.ingest.memories.purge_tombstones(ttl_s=1)
    deadline = time.monotonic() + 30
    while client.count(index=alias, body={"query": {"term": {"tombstone_of": "acme"}}})["count"]:
        assert time.monotonic() < deadline
        time.sleep(0.3)
        client.indices.refresh(index=alias)


def _record(client: OpenSearch, s: Settings, task_id: str) -> dict[str, Any]:
    from brain_search.store.indices import IndexNames

    r = client.get(index=IndexNames.of(s).ingest_tasks, id=task_id, ignore=[404])
    return dict(r.get("_source") or {})


def _pool_child(worker: WorkerProcess) -> int:
    assert worker.proc is not None
    out = subprocess.run(["pgrep", "-P", str(worker.proc.pid)], capture_output=True, text=True, check=False)
    children = [int(p) for p in out.stdout.split()]
    assert len(children) == 1, children
    return children[0]


def _items(prefix: str, n: int) -> list[MemoryItem]:
    return [MemoryItem(memory_id=f"{prefix}{i}", content=f"{prefix} memory {i} about topic {i % 37}") for i in range(n)]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_message_that_kills_its_worker_ends_in_the_dead_letters(wsettings, workers, queue, client) -> None:
    """A poison message: its worker process dies each time it runs it (SIGKILL of the pool child
    stands in for a crash, an OOM kill or the hard time limit). After BRAIN_INGEST_MAX_DELIVERIES
    deliveries its memories go to the dead letters with the reason; the worker goes on."""
    w1 = workers("w1", bulk_max_docs=20, embedding_batch_size=8, ingest_max_deliveries=2)
    job = IngestJob(task_id=f"poison-{uuid.uuid4().hex[:8]}", tenant_id="acme", items=_items("p", 3000))
    queue.submit(job)
    for delivery in (1, 2):
        deadline = time.monotonic() + 180
        while _record(client, wsettings, job.task_id).get("deliveries") != delivery:
            assert time.monotonic() < deadline, w1.log()[-3000:]
            time.sleep(0.05)
        os.kill(_pool_child(w1), signal.SIGKILL)
    status = wait_celery_tasks(queue, "acme", [job.task_id], timeout_s=300)[job.task_id]
    assert status.state.value == "failed" and "poison: delivered 3 times" in (status.error or ""), status
    from brain_search.ingest.dead_letters import DeadLetterStore

    page = DeadLetterStore(client, wsettings).list("acme", task_id=job.task_id, limit=1)
    assert page.total == 3000 and "poison" in page.items[0].reason
    # the worker is still serving
    after = IngestJob(task_id=f"after-{job.task_id}", tenant_id="acme", items=_items("q", 5), refresh=True)
    queue.submit(after)
    assert wait_celery_tasks(queue, "acme", [after.task_id], timeout_s=120)[after.task_id].indexed == 5


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_job_larger_than_the_time_limit_is_split_over_attempts(wsettings, workers, queue, client) -> None:
    """A 20 s task limit and a job that takes longer to embed: each attempt stops starting
    batches inside its budget and the rest continues at once; every memory lands, none twice."""
    w1 = workers("w1", celery_task_time_limit_s=20, bulk_max_docs=100)
    # sentences long enough that embedding 6000 of them takes well over the 9 s budget of an
    # attempt however idle the machine (short ones fitted in one attempt once the encoder got faster)
    tail = " ".join(f"word{j} of the long note about the quarterly planning and the budget" for j in range(4))
    items = [m.model_copy(update={"content": f"{m.content}: {tail}"}) for m in _items("b", 6000)]
    job = IngestJob(task_id=f"big-{uuid.uuid4().hex[:8]}", tenant_id="acme", items=items)
    queue.submit(job)
    status = wait_celery_tasks(queue, "acme", [job.task_id], timeout_s=600)[job.task_id]
    assert (status.state.value, status.indexed, status.failed) == ("succeeded", 6000, 0), status
    assert "after this attempt's time budget" in w1.log(), "the job fitted in one attempt: make it larger"
    ids = memory_ids(client, wsettings, "acme")
    assert len(ids) == 6000 and len(set(ids)) == 6000


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_tasks_lost_to_a_redis_flushall_are_queued_again(wsettings, workers, queue, client, redis_url) -> None:
    """Redis FLUSHALL while tasks wait in the queue: the records keep the payloads, the
    reconciler sees no message for them and queues them again; every memory lands once."""
    import redis

    w1 = workers("w1", reconcile_interval_s=2, reconcile_grace_s=3)
    run = uuid.uuid4().hex[:8]
    jobs = [IngestJob(task_id=f"flush-{run}-{j}", tenant_id="acme", items=_items(f"f{j}-", 50)) for j in range(3)]
    with paused(w1):
        for job in jobs:
            queue.submit(job)
        r = redis.Redis.from_url(redis_url)
        # waiting in the queue (one may already sit in the paused worker's socket: its BRPOP was
        # answered, it has not read it yet; that one survives the FLUSHALL in the worker)
        assert sum(r.llen(key) for key in queue_keys(wsettings)) >= 2
        r.flushall()
        r.close()
    statuses = wait_celery_tasks(queue, "acme", [j.task_id for j in jobs], timeout_s=180)
    assert all(s.state.value == "succeeded" and s.indexed == 50 for s in statuses.values()), statuses
    ids = memory_ids(client, wsettings, "acme")
    assert len(ids) == 150 and len(set(ids)) == 150
    assert "queued again" in w1.log()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_liveness_file_is_fresh_while_the_worker_runs_and_stale_when_it_is_stopped(
    wsettings, workers, tmp_path
) -> None:
    beat = tmp_path / "alive"
    w1 = workers("w1", worker_heartbeat_file=str(beat), worker_heartbeat_interval_s=0.5)
    first = beat.stat().st_mtime
    time.sleep(2)
    assert beat.stat().st_mtime > first  # touched by the running worker's loop
    with paused(w1):
        frozen = beat.stat().st_mtime
        time.sleep(2)
        assert beat.stat().st_mtime == frozen  # a stopped worker fails the probe
    time.sleep(2)
    assert beat.stat().st_mtime > frozen


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_stopped_redis_costs_a_write_one_socket_timeout_and_loses_nothing(
    wsettings, workers, worker_api, client, settings
) -> None:
    """SIGSTOP of Redis (a hung broker, not a dead one: connections stay open and nothing
    answers). A write is accepted within a bound (its record holds the job; the API's outbox
    publishes it once Redis answers) and lands after SIGCONT; nothing is lost or doubled."""
    import threading

    from brain_search.local.redis_server import LocalRedis

    w1 = workers("w1")
    acme = tenant_headers(worker_api, "acme")
    warm = _post(worker_api, acme, {"content": "before the stop", "memory_id": "b1", "refresh": True})
    wait_task(worker_api, acme, warm["task_id"], timeout_s=120)
    pid = LocalRedis(settings).pid()
    assert pid is not None
    result: dict[str, Any] = {}

    def write() -> None:
        for m in ("d1", "d2"):  # the second one meets the open breaker: no wait at all
            t0 = time.monotonic()
            r = worker_api.post("/v1/memories", json={"content": f"during the stop {m}", "memory_id": m}, headers=acme)
            result[m] = {"status": r.status_code, "body": r.json(), "seconds": time.monotonic() - t0}

    stop(pid)
    try:
        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        thread.join(timeout=60)
        assert not thread.is_alive(), "POST /v1/memories still hangs after 60 s with Redis stopped"
    finally:
        os.kill(pid, signal.SIGCONT)
    d1, d2 = result["d1"], result["d2"]
    print(f"SIGSTOP Redis: POST answered {d1['status']} in {d1['seconds']:.1f} s, then {d2['seconds']:.2f} s")
    assert d1["status"] == d2["status"] == 202, result
    assert d1["seconds"] < 3 * wsettings.redis_socket_timeout_s and d2["seconds"] < 2, result
    try:
        for d in (d1, d2):
            assert wait_task(worker_api, acme, d["body"]["task_id"], timeout_s=120)["indexed"] == 1
    except AssertionError as exc:  # what the queue and the worker saw, for the next reader
        raise AssertionError(f"{exc}\n{broker_state(wsettings)}\nworker log:\n{w1.log()[-6000:]}") from exc
    after = _post(worker_api, acme, {"content": "after the stop", "memory_id": "a1", "refresh": True})
    assert wait_task(worker_api, acme, after["task_id"], timeout_s=120)["indexed"] == 1
    assert sorted(memory_ids(client, wsettings, "acme")) == ["a1", "b1", "d1", "d2"]
