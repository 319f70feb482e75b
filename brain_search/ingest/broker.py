"""Worker mode's broker side, shared by the API (producer) and the workers (consumer): the Celery
configuration from the settings, the task's name and queue, and ``CeleryQueue``, which puts a job
on Redis for the workers in ``workers/`` without importing them (the task goes by name).

A task's record (tenant, state, counts, failures) is written to the durable task records in
OpenSearch before the task is queued, and read from there: a task id of another tenant reads as
unknown (404), and a Redis crash loses neither the record nor the outcome. Redis is only the queue.

The queue is two lanes, a list each (``lanes.py``): small jobs in ``<prefix>-ingest``, large ones
and the rest of every sliced job in ``<prefix>-ingest-bulk``; workers take the first first.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any

import orjson
from brain_search_client.models.inputs import printable
from celery import Celery
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.errors import InvalidInput, SetupError
from brain_search.ingest.lanes import Lane, LanePicker
from brain_search.ingest.models import IngestJob, TaskStatus
from brain_search.ingest.signing import job_kwargs, signing_keys
from brain_search.ingest.task_records import TaskRecords

INGEST_TASK = "brain.ingest_batch"
log = logging.getLogger(__name__)


def ingest_queue(settings: Settings) -> str:
    """The fast lane's queue (``lanes.py``), one per index prefix, so two deployments (or test
    runs) never take each other's tasks; the name the single queue had before the lanes."""
    return f"{settings.index_prefix}-ingest"


def bulk_queue(settings: Settings) -> str:
    """The bulk lane's queue: large jobs, and the rest of every job a slice did not finish."""
    return f"{settings.index_prefix}-ingest-bulk"


def lane_queue(settings: Settings, lane: Lane) -> str:
    return ingest_queue(settings) if lane is Lane.fast else bulk_queue(settings)


def lane_queues(settings: Settings) -> list[str]:
    """The queues a worker consumes, in the order it takes them (the fast lane first)."""
    return [ingest_queue(settings), bulk_queue(settings)]


def queue_keys(settings: Settings) -> list[str]:
    """The Redis lists of the lanes (under Celery's global key prefix), for the reconciler and depth."""
    return [f"{settings.index_prefix}:{q}" for q in lane_queues(settings)]


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
        # a hung Redis (SIGSTOP, a network partition) must not hold an API thread: every socket
        # read and connect is bounded and a publish is tried once (the outbox retries it), so
        # POST /v1/memories answers within about BRAIN_REDIS_SOCKET_TIMEOUT_S (test_durability.py)
        "broker_connection_timeout": settings.redis_socket_timeout_s,
        "task_publish_retry": False,
        "broker_transport_options": {
            "socket_timeout": settings.redis_socket_timeout_s,
            "socket_connect_timeout": settings.redis_socket_timeout_s,
            "visibility_timeout": settings.celery_visibility_timeout_s,
            "unacked_restore_interval": settings.celery_unacked_restore_interval_s,
            "unacked_restore_throttle": 1,
            "global_keyprefix": f"{settings.index_prefix}:",
            # a worker polls its queues in the order given (``lane_queues``: the fast lane first),
            # never rotating them as the default round robin does (lanes.py)
            "queue_order_strategy": "priority",
        },
    }


class CeleryQueue:
    """The ingest queue of worker mode (the ``IngestQueue`` protocol).

    A task is accepted once its record (with the job's payload) is stored in OpenSearch; putting
    it on Redis is the fast path. When Redis does not take it (down, hung, partitioned) the job
    waits in this process's outbox, re-published every ``OUTBOX_RETRY_S`` until Redis answers,
    and for ``BREAKER_S`` after a failure new jobs go straight to the outbox instead of waiting
    for a socket timeout each. The outbox is memory: if this process dies first, the workers'
    reconciler queues the job from its record (``reconcile.py``). So a 202 always lands.
    """

    OUTBOX_RETRY_S = 2.0
    BREAKER_S = 10.0
    OUTBOX_MAX = 1000  # jobs kept in memory; beyond, the reconciler has them

    def __init__(self, settings: Settings, client: OpenSearch) -> None:
        if not settings.redis_url:
            raise SetupError("worker mode needs BRAIN_REDIS_URL")
        self.app = Celery("brain-search", set_as_current=False)
        self.app.conf.update(celery_config(settings))
        self.settings = settings
        self.lanes = LanePicker(settings)
        self.records = TaskRecords(client, settings)
        self._outbox: deque[tuple[IngestJob, str]] = deque()  # (job, its lane's queue)
        self._lock = threading.Lock()
        self._open_until = 0.0
        self._closed = threading.Event()
        self._flusher: threading.Thread | None = None
        self.redis_url = settings.redis_url
        self.signing_keys = signing_keys(settings)
        self.queue_keys = queue_keys(settings)
        self._redis: Any = None

    def submit(self, job: IngestJob) -> None:
        try:  # a job that cannot be encoded for its message is refused before anything is accepted
            kwargs = self._message(job)
        except Exception as exc:
            raise InvalidInput("memories", f"cannot be queued: {printable(str(exc))[:200]}") from None
        self.records.create(job)  # raises StoreUnavailable: nothing accepted
        queue = lane_queue(self.settings, self.lanes.pick(job))
        if time.monotonic() < self._open_until or not self._publish(job, queue, kwargs):
            self._defer(job, queue)

    def _publish(self, job: IngestJob, queue: str, kwargs: dict[str, Any] | None = None) -> bool:
        """Whether the job is done with here: on Redis, or (a fault of the job itself, never of
        Redis) given up, its record ``failed``. False: Redis did not take it (outbox, breaker)."""
        try:
            kwargs = kwargs if kwargs is not None else self._message(job)
        except Exception as exc:  # the job, not the queue: it must not hold the outbox or the breaker
            self._give_up(job, f"not queued: {type(exc).__name__}: {printable(str(exc))[:200]}")
            return True
        try:
            self.app.send_task(INGEST_TASK, kwargs=kwargs, task_id=job.task_id, queue=queue)
            return True
        except Exception as exc:  # redis errors, kombu's OperationalError, socket timeouts
            log.warning("task %s: the queue (Redis) did not take it (%s); held in the outbox", job.task_id, exc)
            self._open_until = time.monotonic() + self.BREAKER_S
            return False

    def _message(self, job: IngestJob) -> dict[str, Any]:
        """The task's kwargs (the job, signed), checked to encode as the message's JSON (UTF-8)."""
        kwargs = job_kwargs(job, self.signing_keys)
        orjson.dumps(kwargs)  # raises for what no message can carry (a lone surrogate)
        return kwargs

    def _give_up(self, job: IngestJob, reason: str) -> None:
        log.error("task %s: %s; given up", job.task_id, reason)
        try:
            self.records.failed(job.task_id, reason, failed=len(job.items))
        except Exception as exc:  # the reconciler meets the record again and gives it up itself
            log.warning("task %s: not marked failed (%s)", job.task_id, exc)

    def _defer(self, job: IngestJob, queue: str) -> None:
        with self._lock:
            if len(self._outbox) < self.OUTBOX_MAX:
                self._outbox.append((job, queue))
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_loop, name="outbox", daemon=True)
                self._flusher.start()

    @property
    def outbox_size(self) -> int:
        return len(self._outbox)

    def _flush_loop(self) -> None:
        """Jobs in order while Redis takes them; a job that can never be sent is given up by
        ``_publish`` and the next one goes on (one bad job never holds the others)."""
        while not self._closed.wait(self.OUTBOX_RETRY_S):
            while self._outbox:
                job, queue = self._outbox[0]
                if not self._publish(job, queue):
                    break
                with self._lock:
                    self._outbox.popleft()

    def status(self, tenant_id: str, task_id: str) -> TaskStatus:
        return self.records.get(tenant_id, task_id)

    def depth(self) -> float:
        """Messages waiting in Redis, both lanes (NaN when it does not answer within 2 s)."""
        import redis

        if self._redis is None:
            self._redis = redis.Redis.from_url(self.redis_url, socket_connect_timeout=2, socket_timeout=2)
        try:
            return float(sum(self._redis.llen(key) for key in self.queue_keys))
        except redis.RedisError:
            return float("nan")

    def outcome_sums(self) -> dict[str, float]:
        return self.records.outcome_sums()

    def pending(self, tenant_id: str, memory_id: str) -> bool:
        return self.records.pending(tenant_id, memory_id)

    def close(self) -> None:
        self._closed.set()
        self.app.close()
