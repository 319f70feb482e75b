"""Worker mode on real processes: Redis (the `redis_url` fixture's own server), `brain-search
worker` subprocesses (Celery), the shared OpenSearch node under this run's index prefix.

Each test has its own index prefix, hence its own Celery queue and Redis keys, and stops every
process it started.
"""

from __future__ import annotations

import time
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.store.indices import install_all
from brain_search.store.templates import delete_indices
from tests.integration.ingest_support import (
    WorkerProcess,
    memory_ids,
    wait_celery_tasks,
    wait_task,
    worker_env,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

# Short enough for a test to see a crashed worker's task come back; the invariant the app checks
# (visibility > time limit + longest retry countdown) still holds.
FAST_REDELIVERY = {
    "celery_task_time_limit_s": 40,
    "ingest_task_retry_cap_s": 2,
    "ingest_task_retry_base_s": 0.5,
    "celery_visibility_timeout_s": 45,
    "celery_unacked_restore_interval_s": 2,
}


@pytest.fixture
def wsettings(request, stack_settings: Settings, redis_url: str, client: OpenSearch) -> Iterator[Settings]:
    """Settings of this test's worker deployment (own index prefix → own queue)."""
    prefix = f"{stack_settings.index_prefix}-w{zlib.crc32(request.node.name.encode()) % 10_000}"
    s = stack_settings.model_copy(update={"index_prefix": prefix, "redis_url": redis_url, **FAST_REDELIVERY})
    delete_indices(client, s)
    install_all(client, s)
    yield s
    delete_indices(client, s)
    import redis

    r = redis.Redis.from_url(redis_url)
    keys = list(r.scan_iter(f"{prefix}:*"))
    if keys:
        r.delete(*keys)
    r.close()


@pytest.fixture
def workers(wsettings: Settings, tmp_path: Path) -> Iterator[Any]:
    """start(name, **setting overrides) → a running WorkerProcess; all are stopped at the end."""
    started: list[WorkerProcess] = []

    def start(name: str, **overrides: object) -> WorkerProcess:
        w = WorkerProcess(worker_env(wsettings, **overrides), tmp_path / f"{name}.log", name)
        started.append(w)
        return w.start()

    yield start
    for w in started:
        w.stop()


@pytest.fixture
def queue(wsettings: Settings, client: OpenSearch) -> Iterator[Any]:
    from brain_search.ingest.broker import CeleryQueue

    q = CeleryQueue(wsettings, client)
    yield q
    q.close()


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


@pytest.fixture
def worker_api(api_state, wsettings: Settings, client: OpenSearch) -> Iterator[Any]:
    """The API in worker mode (Redis), sharing the session's model; fresh indices."""
    from fastapi.testclient import TestClient

    from brain_search.api.app import build_state, create_app
    from brain_search.auth import KeyStore
    from brain_search.graph import GraphStore
    from brain_search.ingest.service import make_ingest_service
    from brain_search.retrieval.pipeline import Retriever
    from brain_search.store.indices import install_all

    s = wsettings.model_copy(update={"admin_key": api_state.settings.admin_key})
    install_all(client, s)
    graph = GraphStore(client, s)
    state = replace(
        api_state,
        settings=s,
        keys=KeyStore(client, s),
        graph=graph,
        retriever=Retriever(client, s, api_state.query_cache, graph),
        ingest=make_ingest_service(s, client, api_state.embedder),
    )
    assert build_state  # the real factory is covered elsewhere; here the state shares the session's model
    with TestClient(create_app(state=state)) as tc:
        yield tc
    state.ingest.close()


def _tenant(api: Any, tenant: str) -> dict[str, str]:
    from tests.conftest import ADMIN_KEY

    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    assert api.post("/v1/admin/tenants", json={"tenant_id": tenant}, headers=admin).status_code == 201
    key = api.post(f"/v1/admin/tenants/{tenant}/keys", json={}, headers=admin).json()["key"]
    return {"Authorization": f"Bearer {key}"}


def test_malformed_item_is_dead_lettered_and_the_others_land(wsettings, workers, worker_api, client) -> None:
    workers("w1")
    acme, other = _tenant(worker_api, "acme"), _tenant(worker_api, "other")
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
    queue_key = f"{wsettings.index_prefix}:{wsettings.index_prefix}-ingest"
    task_keys = f"{wsettings.index_prefix}:task:*"
    before = len(list(rd.scan_iter(task_keys)))
    for body in ({"content": ""}, {"content": "x", "node_id": "nope"}, {"content": "x", "timestamp": "yesterday"}):
        r = worker_api.post("/v1/memories", json=body, headers=acme)
        assert r.status_code == 422, r.text
    assert rd.llen(queue_key) == 0 and len(list(rd.scan_iter(task_keys))) == before
    rd.close()
