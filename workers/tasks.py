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
from celery.exceptions import Reject, SoftTimeLimitExceeded
from pydantic import ValidationError

from brain_search.config import Settings
from brain_search.errors import StoreUnavailable
from brain_search.ingest.broker import INGEST_TASK, attempt_budget_s, bulk_queue
from brain_search.ingest.execute import Done, RetryLater, end_failures, retry_after_error, run_attempt, task_countdown
from brain_search.ingest.models import IngestJob
from brain_search.ingest.signing import job_kwargs, signing_keys, verified
from brain_search.ingest.task_records import RecordMissing

if TYPE_CHECKING:
    from workers.brain_celery import BrainCelery
    from workers.runtime import WorkerRuntime

log = logging.getLogger(__name__)

# When a retry cannot be queued (Redis down), the next attempt runs in this worker after at most
# this long instead of the full countdown, well inside the task's soft time limit.
INLINE_RETRY_WAIT_S = 10.0


class IngestRetry(Exception):
    """Why a task is waiting to retry."""


class Poison(Exception):
    """The message killed its worker too many times: its memories are dead-lettered."""


class TaskEnded(Exception):
    """The task ended without success; its memories are dead-lettered (or spooled to be)."""


def _attempt(job: IngestJob, runtime: WorkerRuntime, settings: Settings) -> Done | RetryLater:
    """One attempt, its outcome recorded. Raises ``TaskEnded`` when the task has ended without
    success (its memories are then dead-lettered, or spooled to be)."""
    started = time.monotonic()
    deadline = started + attempt_budget_s(settings)
    try:
        runtime.ensure_indices()
        runtime.drain_spool()
        try:
            deliveries = runtime.records.running(job)
        except RecordMissing as exc:  # expired, or the tenant was erased: nothing of it may be written
            log.warning("task %s: %s; skipped", job.task_id, exc)
            raise TaskEnded(str(exc)) from exc
        except StoreUnavailable as exc:  # the attempt meets the outage itself, with its own retries
            log.warning("task %s: start not recorded: %s", job.task_id, exc)
            deliveries = 1
        if deliveries > settings.ingest_max_deliveries:
            raise Poison(
                f"poison: delivered {deliveries} times, its worker died each time before it finished "
                f"(BRAIN_INGEST_MAX_DELIVERIES={settings.ingest_max_deliveries})"
            )
        # between two slices it yields to a job waiting in the lanes: the rest waits its turn (lanes.py)
        yield_now = runtime.lanes.yield_now(started)
        step = run_attempt(
            job, runtime.pipeline, runtime.dead_letters, settings, deadline=deadline, yield_now=yield_now
        )
        if isinstance(step, Done):
            runtime.records.succeeded(job.task_id, step.result)  # a failed write retries the (idempotent) job
        return step
    except TaskEnded:
        raise
    except Poison as exc:
        _give_up(runtime, job, str(exc))
        raise TaskEnded(str(exc)) from exc
    except SoftTimeLimitExceeded as exc:
        reason = f"soft time limit ({settings.celery_task_time_limit_s} s task limit) in attempt {job.attempt + 1}"
        if job.attempt < settings.ingest_task_max_retries:
            log.warning("task %s: %s; retrying", job.task_id, reason)
            return RetryLater(
                job.model_copy(update={"attempt": job.attempt + 1}), task_countdown(job, settings), reason
            )
        _give_up(runtime, job, reason)
        raise TaskEnded(reason) from exc
    except Exception as exc:
        retry = retry_after_error(job, exc, settings)
        if retry is None:
            log.exception("task %s failed for good", job.task_id)
            _give_up(runtime, job, f"{type(exc).__name__}: {exc}", exc)
            raise TaskEnded(str(exc)) from exc
        log.warning("task %s: attempt %d failed (%s); retrying", job.task_id, job.attempt + 1, exc)
        return retry


def _give_up(runtime: WorkerRuntime, job: IngestJob, error: str, exc: BaseException | None = None) -> None:
    """The task ends without success: every memory it still carries goes to the dead letters
    with the reason (and the engine's status when ``exc`` is its refusal) and the record says
    failed; while OpenSearch cannot take that, it is spooled to Redis and drained later. Never
    silent."""
    attempts = job.attempt + 1
    failures = end_failures(job, error, exc)
    try:
        runtime.dead_letters.add(job.tenant_id, job.task_id, failures, attempts)
        runtime.records.failed(job.task_id, error, failed=job.progress.failed + len(failures))
        return
    except Exception as exc:
        log.warning("task %s: end not stored in OpenSearch (%s); spooling it", job.task_id, exc)
    try:
        runtime.spool.give_up(job.tenant_id, job.task_id, failures, attempts, error=error)
    except Exception as exc:
        log.error("task %s ended (%s) and neither OpenSearch nor Redis took its end: %s", job.task_id, error, exc)


def _refuse_forged(runtime: WorkerRuntime, payload: dict[str, Any]) -> dict[str, Any]:
    """A job without a valid signature: nothing of it is written, no dead letter either (whoever
    can write Redis must not put text into a tenant's dead letters), and its task record is left
    alone (a real task it names is reconciled from its record). Logged and counted
    (``Spool.forged_jobs``)."""
    task_id = str(payload.get("task_id"))
    try:
        runtime.spool.count_forged_job()
    except Exception as exc:
        log.error("task %s: the forged job was not counted: %s", task_id, exc)
    try:
        job = IngestJob.model_validate(payload)
    except ValidationError:
        log.error("task %s: refused, unsigned and malformed (not a job of this API); dropped", task_id)
        return {"failed": True, "error": "forged_job"}
    reason = "the message's signature is missing or wrong (not queued by this API)"
    log.error(
        "task %s: refused, %s (claims tenant %r, %d memories); dropped", task_id, reason, job.tenant_id, len(job.items)
    )
    return {"failed": True, "error": "forged_job"}


def run_ingest_task(
    task: Task, runtime: WorkerRuntime, settings: Settings, payload: dict[str, Any], *, sig: str | None = None
) -> dict[str, Any]:
    keys = signing_keys(settings)
    if not verified(payload, sig, keys):
        return _refuse_forged(runtime, payload)
    job = IngestJob.model_validate(payload)
    while True:
        try:
            step = _attempt(job, runtime, settings)
        except TaskEnded as exc:  # recorded (dead letters + failed record, or the spool): acknowledge
            return {"failed": True, "error": str(exc)}
        if isinstance(step, Done):
            return step.result.model_dump(mode="json")
        step = RetryLater(
            step.job.model_copy(update={"step": job.step + 1}), step.countdown_s, step.reason, step.continues
        )
        try:
            if step.continues:
                runtime.records.continuing(step.job)
            else:
                runtime.records.retrying(step.job, step.reason)
        except StoreUnavailable as exc:  # OpenSearch is what failed: the record catches up next attempt
            log.warning("task %s: retry not recorded: %s", job.task_id, exc)
        try:
            # retries are bounded inside the job (ingest_task_max_retries); continuations of a job
            # larger than one slice or attempt are bounded by its size: no Celery cap (max_retries=None).
            # A continuation waits at the back of the bulk lane (lanes.py); a retry in its own lane.
            raise task.retry(
                kwargs=job_kwargs(step.job, keys),
                countdown=step.countdown_s,
                exc=IngestRetry(step.reason),
                **({"queue": bulk_queue(settings)} if step.continues else {}),
            )
        except Reject as exc:
            # Celery could not queue the retry (Redis down) and would drop this message: keep the
            # job here and run its next attempt in this worker instead
            wait_s = min(step.countdown_s, INLINE_RETRY_WAIT_S)
            log.warning("task %s: retry not queued (%s); next attempt here in %.1f s", job.task_id, exc, wait_s)
            time.sleep(wait_s)
            job = step.job


def register_tasks(app: BrainCelery) -> None:
    @app.task(bind=True, name=INGEST_TASK, acks_late=True, reject_on_worker_lost=True, max_retries=None)
    def ingest_batch(self: Task, job: dict[str, Any], sig: str | None = None) -> dict[str, Any]:
        return run_ingest_task(self, app.runtime(), app.settings, job, sig=sig)
