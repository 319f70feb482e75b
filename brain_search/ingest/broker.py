"""Worker mode's broker side, shared by the API (producer) and the workers (consumer): the Celery
configuration from the settings, the task's name and queue, and ``CeleryQueue``, which puts a job
on Redis for the workers in ``workers/`` without importing them (the task goes by name).

A task's record (tenant, state, counts, failures) is written to the durable task records in
OpenSearch before the task is queued, and read from there: a task id of another tenant reads as
unknown (404), and a Redis crash loses neither the record nor the outcome. Redis is only the queue.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.errors import SetupError, StoreUnavailable
from brain_search.ingest.models import IngestJob, TaskStatus
from brain_search.ingest.task_records import TaskRecords

INGEST_TASK = "brain.ingest_batch"


def ingest_queue(settings: Settings) -> str:
    """One queue per index prefix, so two deployments (or test runs) never take each other's tasks."""
    return f"{settings.index_prefix}-ingest"


def soft_time_limit_s(settings: Settings) -> float:
    """When a task is warned (``SoftTimeLimitExceeded``) before the hard limit kills it."""
    return max(settings.celery_task_time_limit_s * 0.9, settings.celery_task_time_limit_s - 30)


def attempt_budget_s(settings: Settings) -> float:
    """How long one attempt starts new batches: well inside the soft limit, so the batch in
    flight finishes; the rest of a larger job continues in the next attempt (pipeline ``deadline``)."""
    soft = soft_time_limit_s(settings)
    return max(soft * 0.5, soft - 60)


def celery_config(settings: Settings) -> dict[str, Any]:
    """The Celery configuration for these settings (pure)."""
    if settings.celery_visibility_timeout_s <= settings.celery_task_time_limit_s + settings.ingest_task_retry_cap_s:
        raise SetupError(
            "BRAIN_CELERY_VISIBILITY_TIMEOUT_S must exceed the task time limit plus the longest retry countdown, "
            "or Redis would redeliver tasks that are still running or waiting"
        )
    return {
        "broker_url": settings.redis_url,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_default_queue": ingest_queue(settings),
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_acks_on_failure_or_timeout": True,
        # a task killed at the hard time limit is requeued, not acknowledged: it comes back (its
        # record counts the deliveries) until BRAIN_INGEST_MAX_DELIVERIES sends it to the dead
        # letters. Every other failure is handled inside the task (dead letters, spool).
        "task_acks_on_timeout": False,
        # nothing reads Celery's results: status is written to the task records by the task itself
        "task_ignore_result": True,
        "task_time_limit": settings.celery_task_time_limit_s,
        "task_soft_time_limit": soft_time_limit_s(settings),
        "worker_prefetch_multiplier": 1,
        # False: a task running when Redis goes away finishes (its writes are idempotent) and, not
        # acknowledged, is redelivered after the visibility timeout and finishes again. True
        # cancelled it, and the cancelled task's redelivery was dropped: after a Redis SIGKILL 2 of
        # 109 accepted tasks ended "failed" and 5 accepted memories never arrived
        # (tests/integration/test_cluster.py::test_whole_stack_survives_node_redis_and_api_kills)
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "worker_hijack_root_logger": False,
        # a prefork child loads the model in worker_process_init before it reports "up"; Celery's
        # default 4 s kills slower children and forks new ones in a loop (seen after a Redis restart
        # on a busy machine: tests/integration/test_cluster.py), so give the model load its time
        "worker_proc_alive_timeout": 120.0,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": settings.celery_visibility_timeout_s,
            "unacked_restore_interval": settings.celery_unacked_restore_interval_s,
            "unacked_restore_throttle": 1,
            "global_keyprefix": f"{settings.index_prefix}:",
        },
    }


class CeleryQueue:
    """The ingest queue of worker mode (the ``IngestQueue`` protocol)."""

    def __init__(self, settings: Settings, client: OpenSearch) -> None:
        if not settings.redis_url:
            raise SetupError("worker mode needs BRAIN_REDIS_URL")
        self.app = Celery("brain-search", set_as_current=False)
        self.app.conf.update(celery_config(settings))
        self.queue = ingest_queue(settings)
        self.records = TaskRecords(client, settings)

    def submit(self, job: IngestJob) -> None:
        self.records.create(job)  # raises StoreUnavailable: nothing queued
        try:
            self.app.send_task(
                INGEST_TASK, kwargs={"job": job.model_dump(mode="json")}, task_id=job.task_id, queue=self.queue
            )
        except Exception as exc:  # redis errors, kombu's OperationalError after its own publish retries
            self.records.discard(job.task_id)
            raise StoreUnavailable(f"the task queue (Redis) did not take the task: {exc}") from exc

    def status(self, tenant_id: str, task_id: str) -> TaskStatus:
        return self.records.get(tenant_id, task_id)

    def pending(self, tenant_id: str, memory_id: str) -> bool:
        return self.records.pending(tenant_id, memory_id)

    def close(self) -> None:
        self.app.close()
