"""The Celery app, built from the settings: Redis as the broker only (task status lives in the
durable task records in OpenSearch, ``brain_search/ingest/task_records.py``; no result backend).

Delivery is at-least-once: a task is acknowledged after it ran (``acks_late``), requeued when its
worker process dies (``task_reject_on_worker_lost``), and a task of a worker killed outright is
redelivered by Redis after the visibility timeout. Tasks are idempotent (document ids are
deterministic), so a redelivery overwrites and never duplicates.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import worker_process_init

from brain_search.config import Settings
from brain_search.errors import SetupError


class BrainCelery(Celery):
    """A Celery app that carries the Settings it was built from."""

    settings: Settings


def ingest_queue(settings: Settings) -> str:
    """One queue per index prefix, so two deployments (or test runs) never take each other's tasks."""
    return f"{settings.index_prefix}-ingest"


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
        # nothing reads Celery's results: status is written to the task records by the task itself
        "task_ignore_result": True,
        "task_time_limit": settings.celery_task_time_limit_s,
        "task_soft_time_limit": max(settings.celery_task_time_limit_s * 0.9, settings.celery_task_time_limit_s - 30),
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


def make_celery(settings: Settings) -> BrainCelery:
    if not settings.redis_url:
        raise SetupError("worker mode needs BRAIN_REDIS_URL (without it, ingestion runs inside the API process)")
    from workers.tasks import register_tasks

    app = BrainCelery("brain-search", set_as_current=False)
    app.settings = settings
    app.conf.update(celery_config(settings))
    register_tasks(app)

    def _warm_up(**_: Any) -> None:
        # prefork children load the model before their first task, not while holding one
        from workers.runtime import get_runtime

        get_runtime(settings)

    worker_process_init.connect(_warm_up, weak=False, dispatch_uid="brain-search-warm-up")
    return app
