"""What one worker process holds: an OpenSearch client, the embedding model, the pipeline.

Built on first use in the process that runs tasks (never at import, never in a prefork parent);
the indices are ensured lazily too, so a worker that starts while OpenSearch is down still runs
and its tasks retry.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.factory import make_worker_embedder
from brain_search.ingest.broker import queue_keys
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.memories import MemoryStore
from brain_search.ingest.models import IngestJob
from brain_search.ingest.pipeline import IngestPipeline
from brain_search.ingest.reconcile import present_task_ids, reconcile
from brain_search.ingest.service import purge_expired
from brain_search.ingest.signing import signing_keys
from brain_search.ingest.task_records import TaskRecords
from brain_search.store.client import make_client
from brain_search.store.following import following
from brain_search.store.indices import ensure_indices
from workers.lane_watch import LaneWatch
from workers.spool import Spool

log = logging.getLogger(__name__)


@dataclass
class WorkerRuntime:
    settings: Settings
    client: OpenSearch
    pipeline: IngestPipeline
    dead_letters: DeadLetterStore
    records: TaskRecords
    spool: Spool
    lanes: LaneWatch
    _indices_ready: bool = False
    _reconciler: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ensure_indices(self) -> None:
        """Install (or, with ``index_setup = "verify"``, check) the indices once and purge expired
        task records. A worker that installs also purges expired tombstones and dead letters; a
        verifying one (the worker role: write-only on memories) leaves that to the API's start."""
        with self._lock:
            if self._indices_ready:
                return
            ensure_indices(self.client, self.settings)
            self.records.purge_expired()
            if self.settings.index_setup == "install":
                purge_expired(MemoryStore(self.client, self.settings), self.dead_letters, self.settings)
            self._indices_ready = True

    def drain_spool(self) -> None:
        """Write what an earlier outage left in the spool (a no-op read when it is empty)."""
        try:
            if len(self.spool):
                self.spool.drain(self.dead_letters, self.records)
        except redis.RedisError as exc:
            log.warning("spool not drained: %s", exc)

    def start_reconciler(self, send: Callable[[IngestJob], None]) -> None:
        """A daemon thread that re-queues unfinished tasks whose message vanished from Redis
        (``ingest/reconcile.py``); one pass per ``reconcile_interval_s`` across all workers (a
        Redis lock)."""
        if self._reconciler is not None:
            return
        self._reconciler = threading.Thread(target=self._reconcile_loop, args=(send,), name="reconcile", daemon=True)
        self._reconciler.start()

    def _reconcile_loop(self, send: Callable[[IngestJob], None]) -> None:
        s = self.settings
        r = self.spool.redis
        prefix = s.index_prefix
        lock = f"{prefix}:brain:reconcile-lock"

        def requeue(job: IngestJob) -> None:
            send(job)
            self.records.requeued(job.task_id)

        while True:
            time.sleep(s.reconcile_interval_s)
            try:
                if not r.set(lock, os.getpid(), nx=True, ex=max(1, int(s.reconcile_interval_s * 0.9))):
                    continue  # another worker's pass
                reconcile(
                    lambda: self.records.stale_unfinished(s.reconcile_grace_s),
                    lambda: present_task_ids(r, queue_keys(s), f"{prefix}:unacked"),
                    requeue,
                    self.records.failed,  # a stored job that can never be queued: its record ends failed
                )
            except Exception as exc:
                log.warning("reconcile pass failed: %s", exc)


def build_runtime(settings: Settings) -> WorkerRuntime:
    """What a worker process holds, built from ``settings`` (``BrainCelery.runtime`` builds it
    once per app, in the process that runs tasks)."""
    client = make_client(settings)
    own = make_worker_embedder(settings)
    if own.dimension != settings.embedding_dimension:
        raise RuntimeError(f"model dimension {own.dimension} != BRAIN_EMBEDDING_DIMENSION")
    # writes follow each index to its encoder (the shared one after a move, a tenant's own)
    embedder = following(client, settings, own, make_worker_embedder)
    pipeline = IngestPipeline(client, embedder, settings)
    if not settings.redis_url:
        raise RuntimeError("workers need BRAIN_REDIS_URL")
    return WorkerRuntime(
        settings,
        client,
        pipeline,
        DeadLetterStore(client, settings),
        TaskRecords(client, settings),
        Spool(settings.redis_url, settings.index_prefix, signing_keys(settings)),  # entries signed as jobs
        LaneWatch(settings),
    )
