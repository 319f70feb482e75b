"""The ingest task. One attempt of a job per run; what is still pending after the per-item
retries comes back as a Celery retry of the same task id carrying only those items.

The task's status is written to the durable task records in OpenSearch (``TaskRecords``) at each
step, never read from Celery's result backend: a Redis crash must not turn a task whose memories
are indexed into "failed" or "unknown".
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from celery import Task
from celery.exceptions import Reject

from brain_search.config import Settings
from brain_search.errors import StoreUnavailable
from brain_search.ingest.broker import INGEST_TASK
from brain_search.ingest.execute import Done, RetryLater, retry_after_error, run_attempt
from brain_search.ingest.models import IngestJob

if TYPE_CHECKING:
    from workers.app import BrainCelery
    from workers.runtime import WorkerRuntime

log = logging.getLogger(__name__)

# When a retry cannot be queued (Redis down), the next attempt runs in this worker after at most
# this long instead of the full countdown, well inside the task's soft time limit.
INLINE_RETRY_WAIT_S = 10.0


class IngestRetry(Exception):
    """Why a task is waiting to retry."""


def _attempt(job: IngestJob, runtime: WorkerRuntime, settings: Settings) -> Done | RetryLater:
    """One attempt, its outcome recorded. Raises when the task has failed for good."""
    try:
        runtime.ensure_indices()
        try:
            runtime.records.running(job)
        except StoreUnavailable as exc:  # the attempt meets the outage itself, with its own retries
            log.warning("task %s: start not recorded: %s", job.task_id, exc)
        step = run_attempt(job, runtime.pipeline, runtime.dead_letters, settings)
        if isinstance(step, Done):
            runtime.records.succeeded(job.task_id, step.result)  # a failed write retries the (idempotent) job
        return step
    except Exception as exc:
        retry = retry_after_error(job, exc, settings)
        if retry is None:
            _record_failure(runtime, job.task_id, exc)
            raise
        log.warning("task %s: attempt %d failed (%s); retrying", job.task_id, job.attempt + 1, exc)
        return retry


def _record_failure(runtime: WorkerRuntime, task_id: str, exc: Exception) -> None:
    try:
        runtime.records.failed(task_id, f"{type(exc).__name__}: {exc}")
    except StoreUnavailable as store_exc:
        log.error("task %s failed (%s) and its record could not say so: %s", task_id, exc, store_exc)


def run_ingest_task(task: Task, settings: Settings, payload: dict[str, Any]) -> dict[str, Any]:
    from workers.runtime import get_runtime

    job = IngestJob.model_validate(payload)
    runtime = get_runtime(settings)
    while True:
        step = _attempt(job, runtime, settings)
        if isinstance(step, Done):
            return step.result.model_dump(mode="json")
        try:
            runtime.records.retrying(step.job, step.reason)
        except StoreUnavailable as exc:  # OpenSearch is what failed: the record catches up next attempt
            log.warning("task %s: retry not recorded: %s", job.task_id, exc)
        try:
            raise task.retry(
                kwargs={"job": step.job.model_dump(mode="json")},
                countdown=step.countdown_s,
                # bounded by ingest_task_max_retries inside the job (None would mean Celery's 3)
                max_retries=settings.ingest_task_max_retries + 1,
                exc=IngestRetry(step.reason),
            )
        except Reject as exc:
            # Celery could not queue the retry (Redis down) and would drop this message: keep the
            # job here and run its next attempt in this worker instead
            wait_s = min(step.countdown_s, INLINE_RETRY_WAIT_S)
            log.warning("task %s: retry not queued (%s); next attempt here in %.1f s", job.task_id, exc, wait_s)
            time.sleep(wait_s)
            job = step.job


def register_tasks(app: BrainCelery) -> None:
    @app.task(bind=True, name=INGEST_TASK, acks_late=True, reject_on_worker_lost=True)
    def ingest_batch(self: Task, job: dict[str, Any]) -> dict[str, Any]:
        return run_ingest_task(self, app.settings, job)
