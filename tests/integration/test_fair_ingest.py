"""Fair ingest on the real stack (issue 67 item 6, ``ingest/lanes.py``): another tenant's large
batch does not hold a single write behind it, through a real worker process (Celery on Redis) and
through embedded mode's threads, and the large batch still lands whole, each memory once.

The property is an order, not a time: the single write ends while most of the batch is still to
be written (with one FIFO it ended after the whole batch). The figures are
``brain-search bench fair-ingest``'s.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.ingest.models import IngestJob, MemoryItem, TaskState
from tests.integration.ingest_support import memory_ids

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

BIG = 600
SLICE = 16


def _big_job(tenant: str) -> IngestJob:
    items = [
        MemoryItem(memory_id=f"b{i}", content=f"import line {i} of the old wiki, topic {i % 41}") for i in range(BIG)
    ]
    return IngestJob(
        task_id=f"big-{uuid.uuid4().hex[:8]}", tenant_id=tenant, items=items, version=time.time_ns() // 1000
    )


def _single(tenant: str) -> IngestJob:
    item = MemoryItem(memory_id="lena-1", content="Lena's blood type is A positive")
    return IngestJob(
        task_id=f"one-{uuid.uuid4().hex[:8]}",
        tenant_id=tenant,
        items=[item],
        refresh=True,
        version=time.time_ns() // 1000,
    )


def _until(status: Any, done: Any, timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while not done(got := status()):
        assert time.monotonic() < deadline, got
        time.sleep(0.05)
    return got


def _written(client: OpenSearch, s: Settings, tenant: str) -> int:
    client.indices.refresh(index=s.memories_alias)
    return int(client.count(index=s.memories_alias, body={"query": {"term": {"tenant_id": tenant}}})["count"])


def _single_passes_the_batch(submit: Any, status: Any, client: OpenSearch, s: Settings) -> None:
    """The batch is being written when the single write is submitted; the single write ends while
    most of the batch is still to be written (the batch yielded to it at a slice's end)."""
    big, one = _big_job("bigco"), _single("smallco")
    submit(big)
    _until(lambda: _written(client, s, "bigco"), lambda n: n >= SLICE, 300)
    submit(one)
    single = _until(lambda: status("smallco", one.task_id), lambda s: s.state is TaskState.succeeded, 120)
    written, batch = _written(client, s, "bigco"), status("bigco", big.task_id)
    assert single.indexed == 1
    assert batch.state is not TaskState.succeeded and written <= BIG // 2, (written, batch)
    final = _until(lambda: status("bigco", big.task_id), lambda s: s.state is TaskState.succeeded, 600)
    assert (final.indexed, final.failed) == (BIG, 0), final


def _landed_once(client: OpenSearch, s: Settings) -> None:
    ids = memory_ids(client, s, "bigco")
    assert len(ids) == BIG and len(set(ids)) == BIG
    assert memory_ids(client, s, "smallco") == ["lena-1"]


def test_a_single_write_passes_another_tenants_batch_on_a_worker(wsettings, workers, queue, client) -> None:
    w1 = workers("w1", ingest_slice_memories=SLICE)
    _single_passes_the_batch(queue.submit, queue.status, client, wsettings)
    _landed_once(client, wsettings)
    assert "yielding to a waiting job" in w1.log()


def test_a_single_write_passes_another_tenants_batch_in_embedded_mode(
    wsettings: Settings, client: OpenSearch, embedder
) -> None:
    from brain_search.ingest.modes import embedded_service

    s = wsettings.model_copy(update={"redis_url": None, "ingest_slice_memories": SLICE})
    service = embedded_service(s, client, embedder)
    try:
        _single_passes_the_batch(service.queue.submit, service.queue.status, client, s)
    finally:
        service.close()
    _landed_once(client, s)
