"""`brain-search ingest`: records → batches → tasks, through the API or in-process, with a
bounded number of tasks in flight, and a summary (throughput, failures).

Both submitters turn a batch into a task and read its status; in-process, the task runs on the
embedded-mode queue of this process (the same code as the API's embedded mode and the workers').
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import httpx
from brain_search_client import AdminClient, ApiError, BrainClient, BrainError, ConnectionFailed
from pydantic import ValidationError

from brain_search.config import Settings
from brain_search.errors import BrainSearchError, Conflict, InvalidInput, NotFound, SetupError
from brain_search.ingest.models import IngestOptions, IngestRequest, MemoryIn, TaskState, TaskStatus
from brain_search.ingest.sources import SourceRecord
from brain_search.tenancy.auth import KeyStore, validate_tenant_id

FINISHED = (TaskState.succeeded, TaskState.failed)
T = TypeVar("T")
History = dict[str, list[dict[str, Any]]]
"""memory id → its earlier versions as an export wrote them"""
MAX_LISTED = 50


class Rejected(BrainSearchError):
    """A batch refused before queueing (HTTP 422 / InvalidInput): the reason names the field."""


class Submitter(Protocol):
    def submit(
        self, tenant_id: str | None, memories: list[MemoryIn], options: IngestOptions, history: History | None = None
    ) -> tuple[str, str]:
        """Queue a batch (with the earlier versions its memories carry); returns (tenant id, task
        id). Raises Rejected."""
        ...

    def status(self, tenant_id: str, task_id: str) -> TaskStatus: ...

    def close(self) -> None: ...


@dataclass
class IngestSummary:
    read: int = 0
    submitted: int = 0
    indexed: int = 0
    failed: int = 0
    rejected: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (where / memory id, reason)
    elapsed_s: float = 0.0

    @property
    def rate(self) -> float:
        """Memories indexed per second."""
        return self.indexed / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def note(self, where: str, reason: str) -> None:
        if len(self.failures) < MAX_LISTED:
            self.failures.append((where, reason))


def run_ingest(
    records: Iterable[SourceRecord],
    submitter: Submitter,
    options: IngestOptions,
    batch_size: int = 256,
    *,
    max_in_flight: int = 4,
    on_progress: Callable[[int], None] = lambda n: None,
    poll_s: float = 0.25,
) -> IngestSummary:
    """Send every record; returns when every task has finished."""
    summary = IngestSummary()
    started = time.monotonic()
    in_flight: dict[str, tuple[str, int]] = {}  # task id → (tenant, records)

    def absorb(block: bool) -> None:
        while in_flight:
            for task_id, (tenant, n) in list(in_flight.items()):
                st = submitter.status(tenant, task_id)
                if st.state not in FINISHED:
                    continue
                del in_flight[task_id]
                summary.indexed += st.indexed
                summary.failed += st.failed if st.state is TaskState.succeeded else st.submitted - st.indexed
                for f in st.failures:
                    summary.note(f"{tenant} {f.memory_id}", f.reason)
                if st.state is TaskState.failed:
                    summary.note(f"task {task_id}", st.error or "failed")
                on_progress(n)
            if not block or len(in_flight) < max_in_flight:
                return
            time.sleep(poll_s)

    def flush(tenant: str | None, batch: list[SourceRecord]) -> None:
        if not batch:
            return
        while len(in_flight) >= max_in_flight:
            absorb(block=True)
        memories = [r.memory for r in batch if r.memory is not None]
        history = {r.memory.memory_id: r.history for r in batch if r.memory and r.memory.memory_id and r.history}
        try:
            tenant_id, task_id = submitter.submit(tenant, memories, options, history or None)
        except Rejected as exc:
            summary.rejected += len(batch)
            summary.note(f"{batch[0].where} … {batch[-1].where}", str(exc))
            on_progress(len(batch))
            return
        summary.submitted += len(batch)
        in_flight[task_id] = (tenant_id, len(batch))
        absorb(block=False)

    batch: list[SourceRecord] = []
    batch_tenant: str | None = None
    for rec in records:
        summary.read += 1
        if rec.error is not None or rec.memory is None:
            summary.rejected += 1
            summary.note(rec.where, rec.error or "no memory")
            on_progress(1)
            continue
        if batch and (rec.tenant_id != batch_tenant or len(batch) >= batch_size):
            flush(batch_tenant, batch)
            batch = []
        batch_tenant = rec.tenant_id
        batch.append(rec)
    flush(batch_tenant, batch)
    while in_flight:
        absorb(block=True)
        if in_flight:
            time.sleep(poll_s)
    summary.elapsed_s = time.monotonic() - started
    return summary


class ApiSubmitter:
    """Through the HTTP API (``brain_search_client``, retrying while the service is unavailable). Records
    that name a tenant (LoCoMo) need the admin key: each tenant is created (idempotent) and given
    a key for this run."""

    def __init__(
        self,
        url: str,
        api_key: str | None,
        admin_key: str | None,
        timeout_s: float = 60.0,
        *,
        http: httpx.Client | None = None,
    ) -> None:
        options: dict[str, Any] = {"timeout": timeout_s, "max_retries": 5, "http_client": http}
        self.api = BrainClient(url, api_key=api_key, **options) if api_key else None
        self.admin = AdminClient(url, admin_key=admin_key, **options) if admin_key else None
        self._clients: dict[str, BrainClient] = {}

    def _client(self, tenant_id: str | None) -> BrainClient:
        if tenant_id is None:
            if self.api is None:
                raise SetupError("give an API key (--api-key or BRAIN_API_KEY)")
            return self.api
        if tenant_id not in self._clients:
            admin = self.admin
            if admin is None:
                raise SetupError(f"these records name their tenants ({tenant_id}, ...): give --admin-key")
            self._clients[tenant_id] = self._guard(lambda: admin.tenant_client(tenant_id, label="brain-search ingest"))
        return self._clients[tenant_id]

    @staticmethod
    def _guard(fn: Callable[[], T]) -> T:
        """A 422 (a field) or a 409 (a memory id stored for another user) is the record's fault
        (``Rejected``); anything else stops the run."""
        try:
            return fn()
        except ApiError as exc:
            if exc.status in (409, 422):
                raise Rejected(exc.detail) from None
            raise SetupError(str(exc)) from None
        except (ConnectionFailed, BrainError) as exc:
            raise SetupError(str(exc)) from None

    def submit(
        self, tenant_id: str | None, memories: list[MemoryIn], options: IngestOptions, history: History | None = None
    ) -> tuple[str, str]:
        api = self._client(tenant_id)
        write = options.model_dump()
        accepted = self._guard(lambda: api.memories.add_many(memories, history=history or None, **write))
        return tenant_id or "", accepted.task_id

    def status(self, tenant_id: str, task_id: str) -> TaskStatus:
        api = self._client(tenant_id or None)
        return self._guard(lambda: api.tasks.get(task_id))

    def close(self) -> None:
        for client in (self.api, self.admin, *self._clients.values()):
            if client is not None:
                client.close()


class InProcessSubmitter:
    """In this process, on OpenSearch alone: an embedded-mode ingest service with this process's
    model, so a batch is accepted (validated, stamped with its version, queued) exactly as the
    API accepts a POST, and a delete accepted after it wins."""

    def __init__(self, settings: Settings, tenant_id: str | None) -> None:
        from brain_search.encoders.factory import make_worker_embedder
        from brain_search.graph.store import GraphStore
        from brain_search.ingest.modes import embedded_service
        from brain_search.store.client import make_client
        from brain_search.store.indices import ensure_indices

        self.settings = settings
        self.default_tenant = validate_tenant_id(tenant_id) if tenant_id else None
        self.client = make_client(settings)
        ensure_indices(self.client, settings)
        self.graph = GraphStore(self.client, settings)
        self.keys = KeyStore(self.client, settings)
        self.service = embedded_service(settings, self.client, make_worker_embedder(settings))
        self._tenants: set[str] = set()

    def _tenant(self, tenant_id: str | None) -> str:
        tenant = tenant_id or self.default_tenant
        if not tenant:
            raise SetupError("in-process ingestion of JSON Lines needs --tenant")
        if tenant not in self._tenants:
            validate_tenant_id(tenant)
            try:
                self.keys.get_tenant(tenant)
            except NotFound:
                self.keys.create_tenant(tenant)
            self._tenants.add(tenant)
        return tenant

    def submit(
        self, tenant_id: str | None, memories: list[MemoryIn], options: IngestOptions, history: History | None = None
    ) -> tuple[str, str]:
        tenant = self._tenant(tenant_id)
        try:
            request = IngestRequest.model_validate({**options.model_dump(), "memories": memories, "history": history})
            accepted = self.service.accept(tenant, request, self.settings, self.graph)
        except InvalidInput as exc:
            raise Rejected(f"{exc.field}: {exc.reason}") from None
        except ValidationError as exc:  # the earlier versions a line carries
            raise Rejected("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])) from None
        except Conflict as exc:
            raise Rejected(exc.reason) from None
        return tenant, accepted.task_id

    def status(self, tenant_id: str, task_id: str) -> TaskStatus:
        return self.service.queue.status(tenant_id, task_id)

    def close(self) -> None:
        self.service.close()
        self.client.close()
