"""Worker mode on real processes: Redis (the `redis_url` fixture's own server), `brain-search
worker` subprocesses (Celery), the shared OpenSearch node under this run's index prefix.

Each test has its own index prefix, hence its own Celery queue and Redis keys, and stops every
process it started.
"""

from __future__ import annotations

import time
import uuid
import zlib
from typing import Any

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.ingest.models import IngestJob, MemoryItem
from tests.integration.ingest_support import (
    memory_ids,
    tenant_headers,
    wait_celery_tasks,
    wait_task,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]


def _job(task_id: str, tenant: str, ids: list[str], **kw: Any) -> IngestJob:
    items = [
        MemoryItem(memory_id=i, content=f"memory {i}: notes about topic {zlib.crc32(i.encode()) % 50}") for i in ids
    ]
    return IngestJob(task_id=task_id, tenant_id=tenant, items=items, **kw)


def _count(client: OpenSearch, s: Settings, tenant: str) -> int:
    client.indices.refresh(index=s.memories_alias)
    r = client.count(index=s.memories_alias, body={"query": {"term": {"tenant_id": tenant}}})
    return int(r["count"])


def test_kill_9_mid_batch_then_every_memory_exactly_once(wsettings, workers, queue, client) -> None:
    big = [f"k{i}" for i in range(1000)]
    small = [[f"s{j}-{i}" for i in range(100)] for j in range(2)]
    w1 = workers("w1", bulk_max_docs=25, embedding_batch_size=16)
    run = uuid.uuid4().hex[:8]
    jobs = [
        _job(f"kill-big-{run}", "acme", big),
        *(_job(f"kill-small-{run}-{j}", "acme", ids) for j, ids in enumerate(small)),
    ]
    for job in jobs:
        queue.submit(job)
    # wait until the big batch is partly written, then crash the worker
    deadline = time.monotonic() + 120
    while (n := _count(client, wsettings, "acme")) < 50:
        assert time.monotonic() < deadline, w1.log()[-3000:]
        time.sleep(0.1)
    w1.kill9()
    at_kill = _count(client, wsettings, "acme")
    assert 0 < at_kill < len(big), f"not mid-batch: {n}, {at_kill}"
    assert queue.status("acme", jobs[0].task_id).state.value == "running"  # it never finished

    workers("w2", bulk_max_docs=25, embedding_batch_size=16)
    statuses = wait_celery_tasks(queue, "acme", [j.task_id for j in jobs], timeout_s=240)
    assert all(s.state.value == "succeeded" and s.failed == 0 for s in statuses.values()), statuses
    assert statuses[jobs[0].task_id].indexed == len(big)
    ids = memory_ids(client, wsettings, "acme")
    expected = big + [i for ids in small for i in ids]
    assert len(ids) == len(expected) and sorted(ids) == sorted(expected)  # each once, none lost


def test_same_batch_delivered_twice_leaves_the_count_unchanged(wsettings, workers, queue, client) -> None:
    workers("w1")
    ids = [f"d{i}" for i in range(200)]
    run = uuid.uuid4().hex[:8]
    job = _job(f"dup-{run}-1", "acme", ids, refresh=True)
    queue.submit(job)
    wait_celery_tasks(queue, "acme", [job.task_id], timeout_s=120)
    assert _count(client, wsettings, "acme") == 200
    # the very same message again (a redelivery), then the same batch under a new task id
    queue.submit(job)
    assert queue.status("acme", job.task_id).state.value in ("queued", "running")  # not the old result
    again = job.model_copy(update={"task_id": f"dup-{run}-2"})
    queue.submit(again)
    statuses = wait_celery_tasks(queue, "acme", [job.task_id, again.task_id], timeout_s=120)
    assert all(s.indexed == 200 for s in statuses.values())
    assert sorted(memory_ids(client, wsettings, "acme")) == sorted(ids)


def test_malformed_item_is_dead_lettered_and_the_others_land(wsettings, workers, worker_api, client) -> None:
    workers("w1")
    acme, other = tenant_headers(worker_api, "acme"), tenant_headers(worker_api, "other")
    service = worker_api.app.state.brain.ingest
    assert service.mode == "workers"
    items = [MemoryItem(memory_id=f"g{i}", content=f"good memory {i}") for i in range(20)]
    items.insert(7, MemoryItem(memory_id="bad", content="bad date", timestamp="2023-13-45"))
    task_id = f"dl-{uuid.uuid4().hex[:8]}"
    service.queue.submit(IngestJob(task_id=task_id, tenant_id="acme", items=items, refresh=True))
    task = wait_task(worker_api, acme, task_id, timeout_s=120)
    assert (task["state"], task["indexed"], task["failed"]) == ("succeeded", 20, 1), task
    assert worker_api.get(f"/v1/tasks/{task_id}", headers=other).status_code == 404
    page = worker_api.get("/v1/dead-letters", params={"task_id": task_id}, headers=acme).json()
    assert page["total"] == 1
    dead = page["items"][0]
    assert dead["memory_id"] == "bad" and dead["error_type"] == "mapper_parsing_exception"
    assert "failed to parse" in dead["reason"] and dead["payload"]["timestamp"] == "2023-13-45"
    assert sorted(memory_ids(client, wsettings, "acme")) == sorted(f"g{i}" for i in range(20))

    # through the API: 202, the worker indexes it; bad input: 422 and nothing reaches Redis
    r = worker_api.post("/v1/memories", json={"content": "via the API", "memory_id": "api-1"}, headers=acme)
    assert r.status_code == 202
    assert wait_task(worker_api, acme, r.json()["task_id"], timeout_s=120)["indexed"] == 1
    import redis

    rd = redis.Redis.from_url(str(wsettings.redis_url))
    from brain_search.ingest.broker import queue_keys

    task_keys = f"{wsettings.index_prefix}:task:*"
    before = len(list(rd.scan_iter(task_keys)))
    for body in ({"content": ""}, {"content": "x", "node_id": "nope"}, {"content": "x", "timestamp": "yesterday"}):
        r = worker_api.post("/v1/memories", json=body, headers=acme)
        assert r.status_code == 422, r.text
    assert sum(rd.llen(key) for key in queue_keys(wsettings)) == 0 and len(list(rd.scan_iter(task_keys))) == before
    rd.close()


def test_a_forged_job_is_refused_and_counted(wsettings, workers, queue, client, redis_url) -> None:
    """Whoever can write to Redis cannot write into a tenant: a message whose signature is missing
    or made with another key is refused by the worker and counted; nothing of it is written, not
    even a dead letter under the tenant it claims (issue 54 item 10: Redis access alone put text
    into any tenant's dead letters); a real task's record it names is left as it was."""
    from brain_search.ingest.broker import INGEST_TASK, ingest_queue
    from brain_search.ingest.signing import job_kwargs, signing_keys
    from brain_search.store.indices import IndexNames
    from workers.spool import Spool

    assert signing_keys(wsettings), "the test settings sign jobs"
    workers("w1")
    counter = Spool(redis_url, wsettings.index_prefix)
    before = counter.forged_jobs
    run = uuid.uuid4().hex[:8]
    legit = _job(f"legit-{run}", "acme", ["a1", "a2"])
    queue.submit(legit)
    wait_celery_tasks(queue, "acme", [legit.task_id], timeout_s=120)
    # straight into Redis: acme's real task id, another tenant, unsigned / signed with a wrong key
    unsigned = {"job": _job(legit.task_id, "victim", ["u1", "u2"]).model_dump(mode="json")}
    wrong_key = job_kwargs(_job(legit.task_id, "victim", ["w1", "w2"]), [b"not-the-key"])
    for n, kwargs in enumerate((unsigned, wrong_key)):
        queue.app.send_task(INGEST_TASK, kwargs=kwargs, task_id=f"forged-{run}-{n}", queue=ingest_queue(wsettings))

    deadline = time.monotonic() + 120
    while counter.forged_jobs < before + 2:
        assert time.monotonic() < deadline, "the forged jobs were not refused"
        time.sleep(0.5)
    dead = IndexNames.of(wsettings).dead_letters
    client.indices.refresh(index=dead)
    query = {"query": {"term": {"tenant_id": "victim"}}}
    assert int(client.count(index=dead, body=query)["count"]) == 0  # no dead letter planted
    assert _count(client, wsettings, "victim") == 0  # nothing of it written
    status = queue.status("acme", legit.task_id)
    assert status.state.value == "succeeded" and status.indexed == 2  # the record it named: untouched
