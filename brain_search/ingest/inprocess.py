"""Embedded mode: without Redis, ingest tasks run on a small thread pool inside the API process,
through the same attempt code as the Celery workers, with the same two lanes (``lanes.py``): a
small job waits in the fast lane, a large one in the bulk lane, the threads take the fast lane
first, and a job yields between two slices to one waiting (the rest of it to the back of the bulk
lane).

Tasks live in memory: a restart of the process loses queued tasks and their status (memories
already indexed stay). Run workers (``BRAIN_REDIS_URL``) when that matters.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from brain_search.config import Settings
from brain_search.errors import NotFound
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.execute import Done, RetryLater, end_failures, ended_result, retry_after_error, run_attempt
from brain_search.ingest.lanes import Lane, LanePicker, LaneScheduler, should_yield
from brain_search.ingest.models import IngestJob, JobResult, TaskState, TaskStatus
from brain_search.ingest.pipeline import IngestPipeline
from brain_search.ingest.task_records import job_memory_ids

log = logging.getLogger(__name__)


@dataclass
class _Record:
    tenant_id: str
    submitted: int
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    state: TaskState = TaskState.queued
    result: JobResult | None = None
    error: str | None = None
    finished_at: datetime | None = None
    ids: list[tuple[str, str]] = field(default_factory=list)  # (tenant, memory id) still counted as pending


class InProcessQueue:
    def __init__(
        self,
        pipeline: IngestPipeline,
        dead_letters: DeadLetterStore,
        settings: Settings,
        max_records: int = 10_000,
    ) -> None:
        self.pipeline = pipeline
        self.dead_letters = dead_letters
        self.settings = settings
        self.max_records = max_records
        self.tasks_submitted = 0
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self._pending: Counter[tuple[str, str]] = Counter()  # (tenant, memory id) of unfinished tasks
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.events: Callable[[str, int], None] = lambda event, n: None
        self._totals: Counter[str] = Counter()
        self.lanes = LanePicker(settings)
        self._waiting: LaneScheduler[tuple[IngestJob, Lane]] = LaneScheduler()
        self._threads = [
            threading.Thread(target=self._serve, name=f"ingest-{i}", daemon=True)
            for i in range(max(1, settings.ingest_inprocess_threads))
        ]
        for t in self._threads:
            t.start()

    def submit(self, job: IngestJob) -> None:
        ids = [(job.tenant_id, m) for m in job_memory_ids(job)]
        with self._lock:
            self._records[job.task_id] = _Record(job.tenant_id, job.submitted, ids=ids)
            self._pending.update(ids)
            self.tasks_submitted += 1
            self._evict()
        lane = self.lanes.pick(job)
        self._waiting.put((job, lane), lane)

    def depth(self) -> float:
        """Tasks not finished yet (this process's queue)."""
        with self._lock:
            return float(
                sum(1 for r in self._records.values() if r.state not in (TaskState.succeeded, TaskState.failed))
            )

    def outcome_sums(self) -> dict[str, float]:
        with self._lock:
            return {k: float(v) for k, v in self._totals.items()}

    def pending(self, tenant_id: str, memory_id: str) -> bool:
        with self._lock:
            return self._pending[(tenant_id, memory_id)] > 0

    def _release(self, ids: list[tuple[str, str]]) -> None:
        """(under the lock)"""
        self._pending.subtract(ids)
        self._pending += Counter()  # drops the zeros

    def _evict(self) -> None:
        while len(self._records) > self.max_records:
            oldest = next(iter(self._records))
            if self._records[oldest].state not in (TaskState.succeeded, TaskState.failed):
                break
            self._records.popitem(last=False)

    def _set(self, task_id: str, **changes: object) -> None:
        with self._lock:
            rec = self._records.get(task_id)
            if rec is not None:
                for k, v in changes.items():
                    setattr(rec, k, v)
                if rec.state in (TaskState.succeeded, TaskState.failed):
                    rec.finished_at = rec.finished_at or datetime.now(UTC)
                    # no longer pending the moment its status says it ended (an edit may follow at once)
                    self._release(rec.ids)
                    rec.ids = []

    def _serve(self) -> None:
        """One thread: the next turn of a job (fast lane first), until closed."""
        while (entry := self._waiting.take()) is not None:
            job, lane = entry
            try:
                self._turn(job, lane)
            except Exception as exc:  # a bug, not the engine: the task ends with it, never silently
                log.exception("ingest task %s failed", job.task_id)
                self._set(job.task_id, state=TaskState.failed, error=f"{type(exc).__name__}: {exc}")

    def _turn(self, job: IngestJob, lane: Lane) -> None:
        """One attempt of one slice of ``job``; what is left waits its turn again: the rest of the
        job at the back of the bulk lane, a retry in its own lane after its countdown."""
        self._set(job.task_id, state=TaskState.running)
        started = time.monotonic()

        def yield_now() -> bool:
            fast, bulk = self._waiting.waiting(Lane.fast), self._waiting.waiting(Lane.bulk)
            return should_yield(fast, bulk, time.monotonic() - started, self.settings)

        try:
            step = run_attempt(job, self.pipeline, self.dead_letters, self.settings, yield_now=yield_now)
        except Exception as exc:  # recorded on the task, never dropped
            retry = retry_after_error(job, exc, self.settings)
            if retry is None:
                log.exception("ingest task %s failed", job.task_id)
                self._give_up(job, exc)
                return
            step = retry
        if isinstance(step, Done):
            self._set(job.task_id, state=TaskState.succeeded, result=step.result, error=None)
            r = step.result
            for event, n in (("indexed", r.indexed), ("failed", r.failed), ("superseded", r.superseded)):
                self.events(event, n)
                with self._lock:
                    self._totals[event] += n
            return
        if self._closed.is_set():
            self._set(job.task_id, state=TaskState.failed, error="the API process shut down before the task finished")
            return
        self._again(step, lane)

    def _again(self, step: RetryLater, lane: Lane) -> None:
        """The task waits again, its status showing the progress so far (as a worker's record)."""
        job = step.job
        so_far = JobResult.so_far(job.progress, submitted=job.submitted, attempts=job.attempt + 1)
        if step.continues:
            self._set(job.task_id, state=TaskState.running, error=None, result=so_far)
            self._waiting.put((job, Lane.bulk), Lane.bulk)
        else:
            self._set(job.task_id, state=TaskState.retrying, error=step.reason, result=so_far)
            self._waiting.put((job, lane), lane, delay_s=step.countdown_s)

    def _give_up(self, job: IngestJob, exc: Exception) -> None:
        """A failure that is not transient, or whose retries are spent: the task is failed with the
        error, and the memories it still carries go to the dead letters with the reason (when the
        engine takes them: the refusal may be of the dead letters themselves)."""
        error = f"{type(exc).__name__}: {exc}"
        failures = end_failures(job, error, exc)
        stored = True
        try:
            self.dead_letters.add(job.tenant_id, job.task_id, failures, job.attempt + 1)
        except Exception as again:
            stored = False
            log.warning("ingest task %s: its memories were not dead-lettered either: %s", job.task_id, again)
        result = ended_result(job, failures, dead_lettered=stored)
        self._set(job.task_id, state=TaskState.failed, error=error, result=result)

    def status(self, tenant_id: str, task_id: str) -> TaskStatus:
        with self._lock:
            rec = self._records.get(task_id)
            if rec is None or rec.tenant_id != tenant_id:
                raise NotFound("task", task_id)
            status = TaskStatus(
                task_id=task_id,
                state=rec.state,
                submitted=rec.submitted,
                error=rec.error,
                created_at=rec.created_at,
                finished_at=rec.finished_at,
            )
            if rec.result is not None:
                r = rec.result
                status = status.model_copy(
                    update={
                        "indexed": r.indexed,
                        "failed": r.failed,
                        "superseded": r.superseded,
                        "failures": r.failures,
                    }
                )
            return status

    def close(self) -> None:
        self._closed.set()
        self._waiting.close()
