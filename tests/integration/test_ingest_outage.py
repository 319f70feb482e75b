"""OpenSearch stopped for ~10 s in the middle of an ingestion: tasks retry and complete, nothing
is lost or doubled. Runs its own single node (from port 9231): the shared node is never stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain_search.config import Settings
from brain_search.errors import StoreUnavailable
from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.local.node import LocalCluster
from brain_search.store.client import make_client
from brain_search.store.indices import install_all
from brain_search.store.templates import delete_indices
from tests.integration.ingest_support import WorkerProcess, memory_ids, wait_celery_tasks, worker_env
from tests.integration.signals import stop, stop_group

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]


def _free_port_pair(first: int) -> int:
    """The first HTTP port from ``first`` (step 1) whose port and port + 100 are both free: two
    test runs on one machine (two checkouts) then get a node each."""
    for port in range(first, first + 50):
        if all(_is_free(p) for p in (port, port + 100)):
            return port
    raise RuntimeError(f"no free port pair in {first}..{first + 49}")


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture(scope="module")
def own_node(settings: Settings) -> Iterator[LocalCluster]:
    """A single node of this run's own (``<prefix>-node``, from port 9231 or
    ``BRAIN_TEST_OUTAGE_PORT``), stopped at the end; the shared node is never touched."""
    s = settings.model_copy(update={"opensearch_heap": "512m"})
    port = int(os.environ.get("BRAIN_TEST_OUTAGE_PORT") or _free_port_pair(9231))
    cluster = LocalCluster(
        s, nodes=1, http_port=port, transport_port=port + 100, cluster_name=f"{settings.index_prefix}-node", log=print
    )
    cluster.start()
    yield cluster
    cluster.stop()


def test_opensearch_down_10s_during_ingestion(settings, redis_url, own_node, tmp_path: Path) -> None:
    s = settings.model_copy(
        update={
            "index_prefix": f"{settings.index_prefix}-outage",
            "opensearch_url": own_node.url,
            "redis_url": redis_url,
            "ingest_retry_deadline_s": 15.0,
            "ingest_retry_cap_s": 3.0,
            "ingest_task_retry_base_s": 1.0,
            "ingest_task_retry_cap_s": 5.0,
            "ingest_task_max_retries": 30,
            "celery_task_time_limit_s": 60,
            "celery_visibility_timeout_s": 70,
        }
    )
    client = make_client(s)
    delete_indices(client, s)
    install_all(client, s)
    from brain_search.ingest.broker import CeleryQueue

    queue = CeleryQueue(s, client)
    worker = WorkerProcess(worker_env(s, bulk_max_docs=50), tmp_path / "worker.log", "outage")
    try:
        worker.start()
        run = uuid.uuid4().hex[:8]  # task ids of this run only
        jobs = [
            IngestJob(
                task_id=f"outage-{run}-{j}",
                tenant_id="acme",
                items=[MemoryItem(memory_id=f"o{j}-{i}", content=f"batch {j} memory {i}") for i in range(100)],
            )
            for j in range(8)
        ]
        for job in jobs:
            queue.submit(job)
        deadline = time.monotonic() + 180
        while queue.status("acme", jobs[0].task_id).state.value != "succeeded":
            assert time.monotonic() < deadline, worker.log()[-3000:]
            time.sleep(0.2)

        before = [queue.status("acme", j.task_id).state.value for j in jobs]
        own_node.stop_node(own_node.nodes[0])  # SIGTERM; returns once the process is gone
        stopped = time.monotonic()
        time.sleep(10)
        # task records live in OpenSearch: while it is down a status read is an honest error
        with pytest.raises(StoreUnavailable):
            queue.status("acme", jobs[-1].task_id)
        own_node.start()
        print(f"OpenSearch was down {time.monotonic() - stopped:.0f}s; task states before: {before}")
        assert any(state != "succeeded" for state in before), "the outage came after the work"

        statuses = wait_celery_tasks(queue, "acme", [j.task_id for j in jobs], timeout_s=300)
        assert all(st.state.value == "succeeded" and st.failed == 0 for st in statuses.values()), statuses
        assert sum(st.indexed for st in statuses.values()) == 800
        ids = memory_ids(client, s, "acme")
        assert len(ids) == 800 and sorted(ids) == sorted(it.memory_id for j in jobs for it in j.items)
        log = worker.log()
        assert "retriable, again in" in log or "pending after attempt" in log, "the outage was never noticed"
    finally:
        worker.stop()
        queue.close()
        delete_indices(client, s)


def test_opensearch_sigstopped_15s_during_ingestion(settings, redis_url, own_node, tmp_path: Path) -> None:
    """SIGSTOP of the engine (hung, not dead: its sockets stay open, nothing answers) in the middle
    of an ingestion. A status read is a StoreUnavailable within the client timeout, never a hang;
    after SIGCONT every task completes: nothing lost, nothing doubled."""
    s = settings.model_copy(
        update={
            "index_prefix": f"{settings.index_prefix}-sigstop",
            "opensearch_url": own_node.url,
            "redis_url": redis_url,
            "opensearch_timeout_s": 5,
            "ingest_retry_deadline_s": 15.0,
            "ingest_retry_cap_s": 3.0,
            "ingest_task_retry_base_s": 1.0,
            "ingest_task_retry_cap_s": 5.0,
            "ingest_task_max_retries": 30,
            "celery_task_time_limit_s": 60,
            "celery_visibility_timeout_s": 70,
        }
    )
    client = make_client(s)
    delete_indices(client, s)
    install_all(client, s)
    from brain_search.ingest.broker import CeleryQueue

    queue = CeleryQueue(s, client)
    worker = WorkerProcess(worker_env(s, bulk_max_docs=50), tmp_path / "worker.log", "sigstop")
    pid = own_node.pid(own_node.nodes[0])
    assert pid is not None
    try:
        worker.start()
        run = uuid.uuid4().hex[:8]
        jobs = [
            IngestJob(
                task_id=f"sigstop-{run}-{j}",
                tenant_id="acme",
                items=[MemoryItem(memory_id=f"s{j}-{i}", content=f"batch {j} memory {i}") for i in range(100)],
            )
            for j in range(8)
        ]
        for job in jobs:
            queue.submit(job)
        deadline = time.monotonic() + 180
        while queue.status("acme", jobs[0].task_id).state.value != "succeeded":
            assert time.monotonic() < deadline, worker.log()[-3000:]
            time.sleep(0.2)
        stop(pid)
        try:
            t0 = time.monotonic()
            with pytest.raises(StoreUnavailable):
                queue.status("acme", jobs[-1].task_id)
            waited = time.monotonic() - t0
            time.sleep(max(0.0, 15 - waited))
        finally:
            os.kill(pid, signal.SIGCONT)
        print(
            f"SIGSTOP OpenSearch 15 s: a status read failed after {waited:.1f} s "
            f"(client timeout {s.opensearch_timeout_s} s)"
        )
        assert waited < 4 * s.opensearch_timeout_s
        statuses = wait_celery_tasks(queue, "acme", [j.task_id for j in jobs], timeout_s=300)
        assert all(st.state.value == "succeeded" and st.failed == 0 for st in statuses.values()), statuses
        ids = memory_ids(client, s, "acme")
        assert len(ids) == 800 and sorted(ids) == sorted(it.memory_id for j in jobs for it in j.items)
    finally:
        worker.stop()
        queue.close()
        with contextlib.suppress(Exception):
            delete_indices(client, s)


def test_an_outage_longer_than_the_retry_budget_ends_in_dead_letters(
    settings, redis_url, own_node, tmp_path: Path
) -> None:
    """Retries spent while OpenSearch is still down: the task's end (its memories dead-lettered,
    its record failed) is spooled to Redis and written once OpenSearch is back. Nothing is lost."""
    s = settings.model_copy(
        update={
            "index_prefix": f"{settings.index_prefix}-long-outage",
            "opensearch_url": own_node.url,
            "redis_url": redis_url,
            "ingest_retry_deadline_s": 2.0,
            "ingest_retry_cap_s": 1.0,
            "ingest_task_retry_base_s": 0.5,
            "ingest_task_retry_cap_s": 1.0,
            "ingest_task_max_retries": 1,
            "celery_task_time_limit_s": 60,
            "celery_visibility_timeout_s": 70,
            "opensearch_timeout_s": 3,
        }
    )
    client = make_client(s)
    delete_indices(client, s)
    install_all(client, s)
    from brain_search.ingest.broker import CeleryQueue

    queue = CeleryQueue(s, client)
    worker = WorkerProcess(worker_env(s), tmp_path / "worker.log", "long-outage")
    run = uuid.uuid4().hex[:8]
    lost = IngestJob(
        task_id=f"lost-{run}",
        tenant_id="acme",
        items=[MemoryItem(memory_id=f"l{i}", content=f"written during the outage {i}") for i in range(30)],
    )
    try:
        worker.start()
        stop_group(worker.proc.pid)  # type: ignore[union-attr]
        queue.submit(lost)  # accepted (record written) while the engine is up
        own_node.stop_node(own_node.nodes[0])
        os.killpg(worker.proc.pid, signal.SIGCONT)  # type: ignore[union-attr]
        deadline = time.monotonic() + 120
        while "spooling it" not in worker.log():
            assert time.monotonic() < deadline, worker.log()[-3000:]
            time.sleep(0.5)
        own_node.start()
        # the next task any worker runs drains the spool first
        nxt = IngestJob(task_id=f"next-{run}", tenant_id="acme", items=[MemoryItem(memory_id="n1", content="after")])
        queue.submit(nxt)
        statuses = wait_celery_tasks(queue, "acme", [lost.task_id, nxt.task_id], timeout_s=180)
        assert statuses[nxt.task_id].indexed == 1
        ended = statuses[lost.task_id]
        assert (ended.state.value, ended.failed) == ("failed", 30), ended
        from brain_search.ingest.dead_letters import DeadLetterStore

        page = DeadLetterStore(client, s).list("acme", task_id=lost.task_id, limit=100)
        assert page.total == 30 and all("gave up after 2 attempts" in d.reason for d in page.items)
        assert {d.payload["memory_id"] for d in page.items} == {it.memory_id for it in lost.items}  # none lost
    finally:
        if worker.proc is not None and worker.proc.poll() is None:
            os.killpg(worker.proc.pid, signal.SIGCONT)
        worker.stop()
        queue.close()
        with contextlib.suppress(Exception):
            delete_indices(client, s)
