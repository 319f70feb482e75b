"""What one worker process holds: an OpenSearch client, the embedding model, the pipeline.

Built on first use in the process that runs tasks (never at import, never in a prefork parent);
the indices are ensured lazily too, so a worker that starts while OpenSearch is down still runs
and its tasks retry.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

import redis
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.embedding import make_embedder
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.memories import MemoryStore
from brain_search.ingest.pipeline import IngestPipeline
from brain_search.ingest.service import purge_expired
from brain_search.ingest.task_records import TaskRecords
from brain_search.store.client import make_client
from brain_search.store.indices import install_all
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
    _indices_ready: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ensure_indices(self) -> None:
        """Install the indices once (``install_all``, idempotent) and purge expired task records,
        tombstones and dead letters."""
        with self._lock:
            if self._indices_ready:
                return
            install_all(self.client, self.settings)
            self.records.purge_expired()
            purge_expired(MemoryStore(self.client, self.settings), self.dead_letters, self.settings)
            self._indices_ready = True

    def drain_spool(self) -> None:
        """Write what an earlier outage left in the spool (a no-op read when it is empty)."""
        try:
            if len(self.spool):
                self.spool.drain(self.dead_letters, self.records)
        except redis.RedisError as exc:
            log.warning("spool not drained: %s", exc)


_runtime: WorkerRuntime | None = None
_runtime_lock = threading.Lock()


def get_runtime(settings: Settings) -> WorkerRuntime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            client = make_client(settings)
            embedder = make_embedder(settings)
            if embedder.dimension != settings.embedding_dimension:
                raise RuntimeError(f"model dimension {embedder.dimension} != BRAIN_EMBEDDING_DIMENSION")
            pipeline = IngestPipeline(client, embedder, settings)
            if not settings.redis_url:
                raise RuntimeError("workers need BRAIN_REDIS_URL")
            _runtime = WorkerRuntime(
                settings,
                client,
                pipeline,
                DeadLetterStore(client, settings),
                TaskRecords(client, settings),
                Spool(settings.redis_url, settings.index_prefix),
            )
        return _runtime
