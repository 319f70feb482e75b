"""The Celery app, built from the settings: Redis as the broker only (task status lives in the
durable task records in OpenSearch, ``brain_search/ingest/task_records.py``; no result backend).

Delivery is at-least-once: a task is acknowledged after it ran (``acks_late``), requeued when its
worker process dies (``task_reject_on_worker_lost``), and a task of a worker killed outright is
redelivered by Redis after the visibility timeout. Tasks are idempotent (document ids are
deterministic), so a redelivery overwrites and never duplicates.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery.signals import worker_process_init

from brain_search.config import Settings
from brain_search.errors import SetupError
from brain_search.ingest.broker import INGEST_TASK, celery_config, lane_queue
from brain_search.ingest.lanes import lane_of
from brain_search.ingest.models import IngestJob
from brain_search.ingest.signing import job_kwargs, signing_keys
from workers.brain_celery import BrainCelery

log = logging.getLogger(__name__)


def send_job(app: BrainCelery, job: IngestJob) -> None:
    """Queue a job again under its own task id, signed, in the lane its size gives it (the reconciler)."""
    kwargs = job_kwargs(job, signing_keys(app.settings))
    queue = lane_queue(app.settings, lane_of(job, app.settings))
    app.send_task(INGEST_TASK, kwargs=kwargs, task_id=job.task_id, queue=queue)


def make_celery(settings: Settings) -> BrainCelery:
    if not settings.redis_url:
        raise SetupError("worker mode needs BRAIN_REDIS_URL (without it, ingestion runs inside the API process)")
    from workers.tasks import register_tasks

    if not signing_keys(settings):
        log.warning(
            "BRAIN_JOB_SIGNING_KEYS is not set: jobs are neither signed nor checked, so whoever can "
            "write to Redis can write into any tenant (brain_search/ingest/signing.py)"
        )
    app = BrainCelery("brain-search", set_as_current=False)
    app.settings = settings
    app._runtime, app._runtime_lock = None, threading.Lock()
    app.conf.update(celery_config(settings))
    register_tasks(app)
    from workers.probes import Heartbeat

    app.steps["worker"].add(Heartbeat)

    def _warm_up(**_: Any) -> None:
        # prefork children load the model before their first task, not while holding one
        app.runtime().start_reconciler(lambda job: send_job(app, job))

    worker_process_init.connect(_warm_up, weak=False, dispatch_uid="brain-search-warm-up")
    return app
