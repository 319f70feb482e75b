"""The API side of worker mode: submit a job to Redis, read a task's status.

The tenant of a task is stored next to it in Redis when it is submitted, so a task id of another
tenant reads as unknown (404). State and result come from Celery's result backend.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import redis
from celery.result import AsyncResult

from brain_search.config import Settings
from brain_search.errors import NotFound, StoreUnavailable
from brain_search.ingest.models import IngestJob, JobResult, TaskState, TaskStatus
from workers.app import make_celery
from workers.tasks import INGEST_TASK

CELERY_STATES = {
    "PENDING": TaskState.queued,
    "RECEIVED": TaskState.queued,
    "STARTED": TaskState.running,
    "RETRY": TaskState.retrying,
    "SUCCESS": TaskState.succeeded,
    "FAILURE": TaskState.failed,
    "REVOKED": TaskState.failed,
}


class CeleryQueue:
    def __init__(self, settings: Settings) -> None:
        self.app = make_celery(settings)
        self.redis = redis.Redis.from_url(str(settings.redis_url), socket_timeout=5, socket_connect_timeout=5)
        self.key_prefix = f"{settings.index_prefix}:task:"
        self.ttl_s = settings.task_ttl_s

    def submit(self, job: IngestJob) -> None:
        key = self.key_prefix + job.task_id
        record = {"tenant_id": job.tenant_id, "submitted": job.submitted, "created_at": datetime.now(UTC).isoformat()}
        try:
            self.redis.set(key, json.dumps(record), ex=self.ttl_s)
            self.app.backend.forget(job.task_id)  # a resubmitted id is queued anew, not "done" from before
            self.app.tasks[INGEST_TASK].apply_async(kwargs={"job": job.model_dump(mode="json")}, task_id=job.task_id)
        except (redis.RedisError, OSError) as exc:
            raise StoreUnavailable(f"the task queue (Redis) did not take the task: {exc}") from exc
        except Exception as exc:  # kombu's OperationalError after its own publish retries
            self.redis.delete(key)
            raise StoreUnavailable(f"the task queue did not take the task: {exc}") from exc

    def status(self, tenant_id: str, task_id: str) -> TaskStatus:
        try:
            raw = self.redis.get(self.key_prefix + task_id)
        except redis.RedisError as exc:
            raise StoreUnavailable(f"the task store (Redis) did not answer: {exc}") from exc
        record = json.loads(raw) if isinstance(raw, (bytes, str)) else None
        if not record or record.get("tenant_id") != tenant_id:
            raise NotFound("task", task_id)
        res = AsyncResult(task_id, app=self.app)
        state = CELERY_STATES.get(res.state, TaskState.running)
        status = TaskStatus(
            task_id=task_id,
            state=state,
            submitted=int(record["submitted"]),
            created_at=datetime.fromisoformat(record["created_at"]),
        )
        if state is TaskState.succeeded:
            r = JobResult.model_validate(res.result)
            return status.model_copy(update={"indexed": r.indexed, "failed": r.failed, "failures": r.failures})
        if state in (TaskState.retrying, TaskState.failed):
            return status.model_copy(update={"error": f"{type(res.result).__name__}: {res.result}"})
        return status

    def close(self) -> None:
        self.redis.close()
        self.app.close()
