"""What the API holds for ingestion, and the choice of mode: worker mode when ``redis_url`` is
set (Celery on Redis), embedded mode otherwise (a thread pool in the API process)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.inprocess import InProcessQueue
from brain_search.ingest.memories import MemoryStore
from brain_search.ingest.models import IngestJob, MemoryItem, TaskStatus
from brain_search.ingest.pipeline import IngestPipeline

if TYPE_CHECKING:
    from brain_search.api.state import AppState


class IngestQueue(Protocol):
    """Where jobs go. ``status`` raises NotFound for an unknown task or another tenant's."""

    def submit(self, job: IngestJob) -> None: ...

    def status(self, tenant_id: str, task_id: str) -> TaskStatus: ...

    def close(self) -> None: ...


def new_job(tenant_id: str, items: list[MemoryItem], refresh: bool) -> IngestJob:
    return IngestJob(task_id=uuid.uuid4().hex, tenant_id=tenant_id, items=items, refresh=refresh)


@dataclass
class IngestService:
    queue: IngestQueue
    dead_letters: DeadLetterStore
    memories: MemoryStore
    mode: str  # "embedded" | "workers"

    def close(self) -> None:
        self.queue.close()


def make_ingest_service(state: AppState) -> IngestService:
    s = state.settings
    dead_letters = DeadLetterStore(state.client, s)
    dead_letters.install()
    queue: IngestQueue
    if s.redis_url:
        from workers.queue import CeleryQueue  # imports Celery only in worker mode

        queue, mode = CeleryQueue(s), "workers"
    else:
        queue, mode = InProcessQueue(IngestPipeline(state.client, state.embedder, s), dead_letters, s), "embedded"
    return IngestService(queue, dead_letters, MemoryStore(state.client, s), mode)
