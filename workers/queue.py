"""The API side of worker mode: submit a job to Redis, read a task's status.

A task's record (tenant, state, counts, failures) is written to the durable task records in
OpenSearch before the task is queued, and read from there: a task id of another tenant reads as
unknown (404), and a Redis crash loses neither the record nor the outcome. Redis is only the queue.
"""

from __future__ import annotations

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.errors import StoreUnavailable
from brain_search.ingest.models import IngestJob, TaskStatus
from brain_search.ingest.task_records import TaskRecords
from workers.app import make_celery
from workers.tasks import INGEST_TASK


class CeleryQueue:
    def __init__(self, settings: Settings, client: OpenSearch) -> None:
        self.app = make_celery(settings)
        self.records = TaskRecords(client, settings)
        self.records.install()

    def submit(self, job: IngestJob) -> None:
        self.records.create(job)  # raises StoreUnavailable: nothing queued
        try:
            self.app.tasks[INGEST_TASK].apply_async(kwargs={"job": job.model_dump(mode="json")}, task_id=job.task_id)
        except Exception as exc:  # redis errors, kombu's OperationalError after its own publish retries
            self.records.discard(job.task_id)
            raise StoreUnavailable(f"the task queue (Redis) did not take the task: {exc}") from exc

    def status(self, tenant_id: str, task_id: str) -> TaskStatus:
        return self.records.get(tenant_id, task_id)

    def close(self) -> None:
        self.app.close()
