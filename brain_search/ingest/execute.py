"""One attempt of an ingest job → done, or retry later with what is still pending.

The same code runs in a Celery worker (``workers/tasks.py``) and in-process (``inprocess.py``);
they differ only in how a retry is scheduled. Every memory of a job ends indexed, dead-lettered
(with the reason) or, when the task itself fails, named by the task's error.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass

from brain_search.config import Settings
from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.lanes import slice_size
from brain_search.ingest.models import IngestJob, ItemFailure, JobResult, MemoryItem
from brain_search.ingest.pipeline import IngestPipeline
from brain_search.ingest.retry_policy import backoff_delay, classify

log = logging.getLogger(__name__)

MAX_LISTED_FAILURES = 100


@dataclass(frozen=True)
class Done:
    result: JobResult


@dataclass(frozen=True)
class RetryLater:
    job: IngestJob
    countdown_s: float
    reason: str
    continues: bool = False
    """the rest of a job a slice or the time budget left: it goes on at once, in the bulk lane"""


def _failure(item: MemoryItem, o: ItemOutcome, dead_lettered: bool) -> ItemFailure:
    return ItemFailure(
        memory_id=item.memory_id,
        reason=o.reason or "unknown",
        status=o.status,
        error_type=o.error_type,
        dead_lettered=dead_lettered,
    )


def task_countdown(job: IngestJob, settings: Settings, rng: Callable[[], float] = random.random) -> float:
    """How long a task waits before its next attempt (``retry_policy.backoff_delay``)."""
    return backoff_delay(job.attempt, settings.ingest_task_retry_base_s, settings.ingest_task_retry_cap_s, rng())


def run_attempt(
    job: IngestJob,
    pipeline: IngestPipeline,
    dead_letters: DeadLetterStore,
    settings: Settings,
    *,
    rng: Callable[[], float] = random.random,
    deadline: float | None = None,
    yield_now: Callable[[], bool] | None = None,
) -> Done | RetryLater:
    """Run one attempt. Permanent failures are dead-lettered now; transient ones are retried
    (``RetryLater``) until ``ingest_task_max_retries``, then dead-lettered too. Items the
    attempt's time budget (``deadline``) left unstarted, and those it left because ``yield_now``
    said another job was waiting (asked between slices, ``lanes.py``), continue at once in a next
    attempt that does not count as a retry."""
    if yield_now is None:
        outcome = pipeline.run(job, deadline)
    else:
        outcome = pipeline.run(job, deadline, step=slice_size(job.items, settings), yield_now=yield_now)
    attempts = job.attempt + 1
    dead = list(outcome.permanent)
    retry = bool(outcome.pending) and job.attempt < settings.ingest_task_max_retries
    if outcome.pending and not retry:
        for item, o in outcome.pending:
            reason = f"gave up after {attempts} attempts: {o.reason}"
            dead.append((item, ItemOutcome(o.memory_id, False, False, o.status, o.error_type, reason)))
    dead_letters.add(job.tenant_id, job.task_id, dead, attempts)

    progress = job.progress.model_copy(deep=True)
    progress.indexed += len(outcome.indexed)
    progress.superseded += len(outcome.superseded)
    progress.failed += len(dead)
    room = MAX_LISTED_FAILURES - len(progress.failures)
    progress.failures += [_failure(item, o, True) for item, o in dead[: max(0, room)]]
    if outcome.deferred:
        next_items = [item for item, _ in outcome.pending] if retry else []
        next_job = job.model_copy(
            update={
                "items": next_items + outcome.deferred,
                "attempt": attempts if retry else job.attempt,
                "progress": progress,
            }
        )
        left = len(next_job.items)
        why = "yielding to a waiting job" if outcome.yielded else "after this attempt's time budget"
        return RetryLater(next_job, 0.0, f"continuing: {left} memories left, {why}", continues=True)
    if retry:
        reason = outcome.pending[0][1].reason or "transient failure"
        log.warning(
            "task %s: %d memories pending after attempt %d (%s)", job.task_id, len(outcome.pending), attempts, reason
        )
        next_job = job.model_copy(
            update={"items": [item for item, _ in outcome.pending], "attempt": attempts, "progress": progress}
        )
        pending_msg = f"{len(outcome.pending)} memories pending, {progress.indexed} indexed so far: {reason}"
        return RetryLater(next_job, task_countdown(job, settings, rng), pending_msg)
    result = JobResult.so_far(progress, submitted=job.submitted, attempts=attempts)
    return Done(result)


def retry_after_error(job: IngestJob, exc: Exception, settings: Settings) -> RetryLater | None:
    """The whole attempt failed (e.g. OpenSearch down while dead-lettering): retry the same items
    later when the failure is transient (``retry_policy``: 429, 5xx, no answer), or None when it
    is not (a 403, a 400, a bug) or the retries are spent."""
    if not classify(exc).retriable or job.attempt >= settings.ingest_task_max_retries:
        return None
    return RetryLater(job.model_copy(update={"attempt": job.attempt + 1}), task_countdown(job, settings), str(exc))


def end_failures(job: IngestJob, error: str, exc: BaseException | None = None) -> list[tuple[MemoryItem, ItemOutcome]]:
    """Every memory a task that ends without success still carries, as a dead letter: the reason,
    and the engine's status and error type when ``exc`` is the engine's answer (a 403, ...)."""
    verdict = classify(exc) if exc is not None else None
    if verdict is not None and not verdict.retriable:
        reason = f"not retried ({verdict.status or verdict.error_type}): {error}"
    else:
        reason = f"gave up after {job.attempt + 1} attempts: {error}"
    status = verdict.status if verdict else None
    error_type = verdict.error_type if verdict else "task_failed"
    return [(item, ItemOutcome(item.memory_id, False, False, status, error_type, reason)) for item in job.items]


def ended_result(job: IngestJob, failures: list[tuple[MemoryItem, ItemOutcome]], dead_lettered: bool) -> JobResult:
    """The counts of a task that ended on ``failures`` (``end_failures``) after its earlier progress."""
    progress = job.progress
    room = max(0, MAX_LISTED_FAILURES - len(progress.failures))
    return JobResult(
        submitted=job.submitted,
        indexed=progress.indexed,
        failed=progress.failed + len(failures),
        superseded=progress.superseded,
        failures=progress.failures + [_failure(item, o, dead_lettered) for item, o in failures[:room]],
        attempts=job.attempt + 1,
    )
