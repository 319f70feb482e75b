"""Durable task records for worker mode: an OpenSearch index (``<prefix>-ingest-tasks``), one
document per task id, written by the API when it accepts a task and by the worker at each step.

Why not Celery's result backend in Redis: a task's status must outlive a Redis crash. With the
status in Redis, a Redis SIGKILL during ingestion left tasks whose memories were all indexed
reading ``failed: ConnectionError`` (the worker could not store its result) or unknown (the
record was lost), see tests/integration/test_cluster.py. Here the record lives with the data it
describes, is replicated like it, and is read in real time by id. Redis is only the queue.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.exceptions import NotFoundError, TransportError

from brain_search.config import Settings
from brain_search.errors import NotFound, StoreUnavailable
from brain_search.ingest.models import IngestJob, JobResult, TaskState, TaskStatus
from brain_search.ingest.sealing import seal, unseal
from brain_search.ingest.signing import signing_keys
from brain_search.store.indices import IndexNames
from brain_search.store.scope import TENANT_FIELD, tenant_of, tenant_term

UNFINISHED = (TaskState.queued, TaskState.running, TaskState.retrying)
ENDED = (TaskState.succeeded.value, TaskState.failed.value)
log = logging.getLogger(__name__)


class RecordMissing(StoreUnavailable):
    """The task's record is gone: expired, or its tenant was erased. Its job must not run."""


def _now() -> datetime:
    return datetime.now(UTC)


def job_memory_ids(job: IngestJob) -> list[str]:
    """The ids a job writes, with the parent id of each piece of a chunked memory."""
    ids = {it.memory_id for it in job.items}
    ids |= {p for it in job.items if isinstance(p := (it.metadata or {}).get("chunk_of"), str)}
    return sorted(ids)


class TaskRecords:
    """Read and write task records. Every write raises ``StoreUnavailable`` when it did not land."""

    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        self.index = IndexNames.of(settings).ingest_tasks
        self.ttl = timedelta(seconds=settings.task_ttl_s)
        self.keys = signing_keys(settings)  # seal the payloads kept (sealing.py)

    def _write(self, task_id: str, doc: dict[str, Any], *, partial: bool) -> None:
        try:
            if partial:
                self.client.update(index=self.index, id=task_id, body={"doc": doc}, params={"retry_on_conflict": 5})
            else:
                self.client.index(index=self.index, id=task_id, body=doc)
        except NotFoundError as exc:  # a partial write to a record that is gone (expired, or its index deleted)
            raise RecordMissing(f"task record {task_id} is missing: {exc}") from exc
        except (TransportError, OSError) as exc:
            raise StoreUnavailable(f"the task record of {task_id} was not stored: {exc}") from exc

    def create(self, job: IngestJob) -> None:
        """Queued, before the task is handed to the queue. A resubmitted id starts over."""
        now = _now()
        doc = {
            TENANT_FIELD: job.tenant_id,
            "state": TaskState.queued.value,
            "submitted": job.submitted,
            "indexed": 0,
            "failed": 0,
            "attempts": 0,
            "failures": [],
            "error": None,
            "created_at": now.isoformat(),
            "updated_at": now.isoformat(),
            "expires_at": (now + self.ttl).isoformat(),
            "memory_ids": job_memory_ids(job),
            # the users whose memories it writes: the forgetting of a user finds its records
            "user_ids": sorted({it.user_id for it in job.items if it.user_id is not None}),
            # kept until the job ends, so a job whose message vanished can be queued again
            # (reconcile.py); sealed, so that the worker's engine role reads no memory text
            "payload": seal(job.model_dump(mode="json"), job.task_id, self.keys),
        }
        self._write(job.task_id, doc, partial=False)

    def stale_unfinished(self, grace_s: float, limit: int = 500) -> list[tuple[str, dict[str, Any] | None]]:
        """(task id, job payload) of unfinished tasks not updated for ``grace_s``, oldest first;
        None for a payload that is missing or does not open (not sealed by the API for that task,
        or by a key this deployment no longer holds): the reconciler gives it up, so it never holds
        the window of the oldest ``limit`` for good."""
        cutoff = (_now() - timedelta(seconds=grace_s)).isoformat()
        body = {
            "query": {
                "bool": {
                    "filter": [
                        {"terms": {"state": [s.value for s in UNFINISHED]}},
                        {"range": {"updated_at": {"lt": cutoff}}},
                        {"range": {"expires_at": {"gt": "now"}}},
                    ]
                }
            },
            "sort": [{"updated_at": "asc"}],
            "size": limit,
            "_source": ["payload"],
        }
        r = self.client.search(index=self.index, body=body)
        out = []
        for h in r["hits"]["hits"]:
            stored = h["_source"].get("payload")
            payload = unseal(stored, h["_id"], self.keys) if stored else None
            out.append((h["_id"], payload))
        return out

    def requeued(self, task_id: str) -> None:
        script = {
            "lang": "painless",
            "source": "ctx._source.state = 'queued'; ctx._source.updated_at = params.now;"
            "ctx._source.requeued = (ctx._source.requeued == null ? 0 : ctx._source.requeued) + 1;",
            "params": {"now": _now().isoformat()},
        }
        try:
            self.client.update(index=self.index, id=task_id, body={"script": script}, params={"retry_on_conflict": 5})
        except (TransportError, OSError) as exc:
            raise StoreUnavailable(f"the task record of {task_id} was not updated: {exc}") from exc

    def pending(self, tenant_id: str, memory_id: str) -> bool:
        """Whether an unfinished task of ``tenant_id`` carries ``memory_id`` (or a piece of it).
        Refreshes the (small) records index first: a task accepted a moment ago counts."""
        try:
            self.client.indices.refresh(index=self.index)
            body = {
                "query": {
                    "bool": {
                        "filter": [
                            tenant_term(tenant_id),
                            {"term": {"memory_ids": memory_id}},
                            {"terms": {"state": [s.value for s in UNFINISHED]}},
                        ]
                    }
                }
            }
            return int(self.client.count(index=self.index, body=body)["count"]) > 0
        except (TransportError, OSError) as exc:
            raise StoreUnavailable(f"the task store (OpenSearch) did not answer: {exc}") from exc

    def running(self, job: IngestJob) -> int:
        """Mark the task running; returns how many times this message (``job.step``) has been
        delivered: 1 the first time, more when a worker died running it and it came back."""
        doc = {"state": TaskState.running.value, "attempts": job.attempt + 1, "updated_at": _now().isoformat()}
        script = {
            "lang": "painless",
            "source": (
                "ctx._source.putAll(params.doc);"
                "if (ctx._source.delivery_attempt == params.attempt) {"
                "  ctx._source.deliveries = (ctx._source.deliveries == null ? 0 : ctx._source.deliveries) + 1;"
                "} else { ctx._source.delivery_attempt = params.attempt; ctx._source.deliveries = 1; }"
            ),
            "params": {"doc": {**doc, **self._progress(job)}, "attempt": job.step},
        }
        try:
            r = self.client.update(
                index=self.index,
                id=job.task_id,
                body={"script": script},
                params={"retry_on_conflict": 5, "_source": "deliveries"},
            )
        except NotFoundError as exc:
            raise RecordMissing(f"task record {job.task_id} is missing: {exc}") from exc
        except (TransportError, OSError) as exc:
            raise StoreUnavailable(f"the task record of {job.task_id} was not stored: {exc}") from exc
        return int(((r.get("get") or {}).get("_source") or {}).get("deliveries") or 1)

    def retrying(self, job: IngestJob, reason: str) -> None:
        """``job`` is the next attempt's job (its progress is what is done so far)."""
        doc = {"state": TaskState.retrying.value, "error": reason, "updated_at": _now().isoformat()}
        self._write(job.task_id, {**doc, **self._progress(job)}, partial=True)

    def continuing(self, job: IngestJob) -> None:
        """``job`` is the rest of the task after a slice (``lanes.py``): still running, with its progress."""
        doc = {"state": TaskState.running.value, "error": None, "updated_at": _now().isoformat()}
        self._write(job.task_id, {**doc, **self._progress(job)}, partial=True)

    def succeeded(self, task_id: str, result: JobResult) -> None:
        doc = {
            "state": TaskState.succeeded.value,
            "payload": None,  # the job has ended: its payload is no longer needed
            "indexed": result.indexed,
            "failed": result.failed,
            "superseded": result.superseded,
            "failures": [f.model_dump(mode="json") for f in result.failures],
            "attempts": result.attempts,
            "error": None,
            "updated_at": _now().isoformat(),
        }
        self._write(task_id, doc, partial=True)

    def failed(self, task_id: str, error: str, failed: int | None = None) -> None:
        doc: dict[str, Any] = {
            "state": TaskState.failed.value,
            "error": error,
            "updated_at": _now().isoformat(),
            "payload": None,  # its memories are in the dead letters
        }
        if failed is not None:
            doc["failed"] = failed
        self._write(task_id, doc, partial=True)

    @staticmethod
    def _progress(job: IngestJob) -> dict[str, Any]:
        p = job.progress
        failures = [f.model_dump(mode="json") for f in p.failures]
        return {"indexed": p.indexed, "failed": p.failed, "superseded": p.superseded, "failures": failures}

    def unfinished(self, tenant_id: str, task_id: str) -> bool:
        """Whether the task has a record of ``tenant_id`` that has not ended (the spool writes a
        task's end only then: an entry replayed after it, or for a task forgotten or erased since,
        writes nothing)."""
        try:
            r = self.client.get(
                index=self.index, id=task_id, ignore=[404], params={"_source_includes": "tenant_id,state"}
            )
        except (TransportError, OSError) as exc:
            raise StoreUnavailable(f"the task store (OpenSearch) did not answer: {exc}") from exc
        src = (r.get("_source") or {}) if r.get("found") else {}
        return tenant_of(src) == tenant_id and src.get("state") not in (None, *ENDED)

    def get(self, tenant_id: str, task_id: str) -> TaskStatus:
        """The task's status; NotFound for an unknown, expired or other tenant's task."""
        try:
            r = self.client.get(index=self.index, id=task_id, ignore=[404], params={"_source_excludes": "payload"})
        except (TransportError, OSError) as exc:
            raise StoreUnavailable(f"the task store (OpenSearch) did not answer: {exc}") from exc
        src = r.get("_source") if r.get("found") else None
        if not src or tenant_of(src) != tenant_id:
            raise NotFound("task", task_id)
        if datetime.fromisoformat(src["expires_at"]) < _now():
            raise NotFound("task", task_id)
        return TaskStatus(
            task_id=task_id,
            state=TaskState(src["state"]),
            submitted=src["submitted"],
            indexed=src.get("indexed") or 0,
            failed=src.get("failed") or 0,
            superseded=src.get("superseded") or 0,
            failures=src.get("failures") or [],
            error=src.get("error"),
            created_at=datetime.fromisoformat(src["created_at"]),
            # a record is not written after it ends: its last update is when it ended
            finished_at=datetime.fromisoformat(src["updated_at"]) if src["state"] in ENDED else None,
        )

    def outcome_sums(self) -> dict[str, float]:
        """Memories submitted / indexed / failed / superseded, summed over the records kept."""
        fields = ("submitted", "indexed", "failed", "superseded")
        body = {"size": 0, "aggs": {f: {"sum": {"field": f}} for f in fields}}
        aggs = self.client.search(index=self.index, body=body)["aggregations"]
        return {f: float(aggs[f]["value"] or 0.0) for f in fields}

    def purge_expired(self) -> None:
        """Delete expired records in the background (a worker does it when it starts)."""
        body = {"query": {"range": {"expires_at": {"lt": "now"}}}}
        with suppress(TransportError, OSError):  # next start tries again; expired records read as unknown
            self.client.delete_by_query(
                index=self.index, body=body, params={"wait_for_completion": "false", "conflicts": "proceed"}
            )
