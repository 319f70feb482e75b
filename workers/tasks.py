"""The ingest task. One attempt of a job per run; what is still pending after the per-item
retries comes back as a Celery retry of the same task id carrying only those items."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from celery import Task

from brain_search.config import Settings
from brain_search.ingest.execute import RetryLater, retry_after_error, run_attempt
from brain_search.ingest.models import IngestJob

if TYPE_CHECKING:
    from workers.app import BrainCelery

log = logging.getLogger(__name__)

INGEST_TASK = "brain.ingest_batch"


class IngestRetry(Exception):
    """Why a task is waiting to retry (shown by ``GET /v1/tasks/{id}``)."""


def run_ingest_task(task: Task, settings: Settings, payload: dict[str, Any]) -> dict[str, Any]:
    from workers.runtime import get_runtime

    job = IngestJob.model_validate(payload)
    try:
        runtime = get_runtime(settings)
        runtime.ensure_indices()
        step = run_attempt(job, runtime.pipeline, runtime.dead_letters, settings)
    except Exception as exc:
        retry = retry_after_error(job, exc, settings)
        if retry is None:
            raise
        log.warning("task %s: attempt %d failed (%s); retrying", job.task_id, job.attempt + 1, exc)
        step = retry
    if isinstance(step, RetryLater):
        raise task.retry(
            kwargs={"job": step.job.model_dump(mode="json")},
            countdown=step.countdown_s,
            max_retries=None,  # bounded by ingest_task_max_retries inside the job
            exc=IngestRetry(step.reason),
        )
    return step.result.model_dump(mode="json")


def register_tasks(app: BrainCelery) -> None:
    @app.task(bind=True, name=INGEST_TASK, acks_late=True, reject_on_worker_lost=True)
    def ingest_batch(self: Task, job: dict[str, Any]) -> dict[str, Any]:
        return run_ingest_task(self, app.settings, job)
