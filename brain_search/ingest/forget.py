"""Forget by filter: every memory of a tenant matching a conversation, a node subtree, a source or
a time range (or, with ``all``, the whole tenant) is deleted as a task with counts; the feedback
kept on recalls that showed them loses them (``forgotten``; ``all``: the tenant's recalls go).

Each matching memory (and each stored piece of a chunked one: pieces carry their parent's fields)
gets a tombstone with the forget's version, the same as a single DELETE, so no write of it
accepted before the forget can bring it back. Copies in indices that do not serve the tenant (the
index an encoder move kept for rollback, one a killed tenant move left) are deleted too. Their
history and dead letters go too; ``all`` also removes every history entry, dead letter and task
record of the tenant (task records hold payloads) from before the forget. Whatever was accepted
after the forget began is kept: a newer write wins over the tombstone, and history (by version),
dead letters and task records (by time) from after it stay. A write of a memory id never stored
before, still queued when the forget runs, is made superseded by the forget's fence
(``ingest/fences.py``), except for a forget bounded in time.

The task is recorded (its request and version included) in the node-tasks index (kind
``forget``) before the 202, then runs on a thread of the API process under a lease it renews
page by page. A forget whose lease has run out (its API was killed or restarted) is taken over
by any API process (``resume_stale``, from ``api/unfinished.py``) and run again from the start: every
step is idempotent, so a kill at any point ends the same.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from brain_search_client.models.forget import ForgetRequest, ForgetStatus
from opensearchpy import ConflictError, OpenSearch

from brain_search.config import Settings
from brain_search.errors import InvalidInput, NotFound
from brain_search.graph.ops import task_doc_id
from brain_search.ingest.fences import FENCED, fence_key
from brain_search.ingest.models import TaskState
from brain_search.ingest.tombstones import forget_older_copies, tombstone_entries, write_versioned
from brain_search.store.indices import IndexNames
from brain_search.store.placement import placement_for
from brain_search.store.scope import TENANT_FIELD, TenantScope, UserScope, jobs_of, scope_filter, tenant_of, tenant_term

log = logging.getLogger(__name__)
PAGE = 500
LEASE_S = 30.0
"""a running forget whose record was not saved for this long is taken over (its API is gone)"""


def check_forget(req: ForgetRequest) -> None:
    """A forget the service runs: some filter, or ``all``; a time range that is one."""
    if req.unfiltered and not req.all:
        raise InvalidInput("all", "no filter matches the whole tenant: send `all: true` to forget everything")
    if req.since and req.until and req.until < req.since:
        raise InvalidInput("until", "is before `since`")


def forget_scope(req: ForgetRequest) -> UserScope:
    """Whose memories (the user and / or agent; none: the whole tenant's)."""
    return UserScope(req.user_id, req.agent_id)


def whole_tenant(req: ForgetRequest) -> bool:
    return forget_scope(req).everyone and req.unfiltered


def whole_owner(req: ForgetRequest) -> bool:
    """Every memory of a user (or agent): their history, dead letters, task records and recall
    records go too (``DELETE /v1/users/{user_id}``)."""
    return not forget_scope(req).everyone and req.unfiltered


class Forgetter:
    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        self.settings = settings
        self.names = IndexNames.of(settings)
        self.placement = placement_for(client, settings)
        # told of each page of memories deleted (None: the whole tenant): IngestService.set_forgotten
        self.forgotten: Callable[[str, list[str] | None], object] = lambda tenant, ids: None
        # told of a user (or agent) forgotten; returns the records of their recalls deleted
        self.owner_forgotten: Callable[[str, UserScope], int] = lambda tenant, scope: 0

    # ------------------------------------------------------------------ the task record
    def _save(self, tenant_id: str, status: ForgetStatus, job: dict[str, Any], **params: Any) -> None:
        """The task record, with what it takes to run it again (``job``) and a renewed lease."""
        doc = {
            TENANT_FIELD: tenant_id,
            "task_id": status.task_id,
            "kind": "forget",
            "created_at": status.created_at.isoformat(),
            "state": status.state,
            "lease_until": (datetime.now(UTC) + timedelta(seconds=LEASE_S)).isoformat(),
            "result": {**status.model_dump(mode="json"), "job": job},
        }
        self.client.index(
            index=self.names.node_tasks,
            id=task_doc_id(tenant_id, status.task_id),
            body=doc,
            params={"refresh": "true", **params},
        )

    def status(self, tenant_id: str, task_id: str) -> ForgetStatus:
        r = self.client.get(index=self.names.node_tasks, id=task_doc_id(tenant_id, task_id), ignore=[404])
        src = r.get("_source") if r.get("found") else None
        if not src or tenant_of(src) != tenant_id or src.get("kind") != "forget":
            raise NotFound("forget task", task_id)
        return ForgetStatus.model_validate({k: v for k, v in src["result"].items() if k != "job"})

    # ------------------------------------------------------------------ running
    def start(self, tenant_id: str, req: ForgetRequest, node_label: str | None, version: int) -> ForgetStatus:
        """Record the task (before the 202: a kill after it leaves a task to take over) and run
        it on a thread; returns its first status."""
        status = ForgetStatus(task_id=f"forget_{secrets.token_hex(8)}", created_at=datetime.now(UTC))
        job = {"request": req.model_dump(mode="json"), "node_label": node_label, "version": version}
        self._save(tenant_id, status, job)
        thread = threading.Thread(
            target=self._run,
            args=(tenant_id, req, node_label, version),
            kwargs={"status": status},
            name="forget",
            daemon=True,
        )
        thread.start()
        return status

    def resume_stale(self) -> int:
        """Run every forget whose lease has run out (its API died) to its end, here, one at a
        time; each is claimed first (compare-and-set), so two APIs never take the same one.
        Returns how many ran."""
        now = datetime.now(UTC).isoformat()
        stale = [{"term": {"kind": "forget"}}, {"term": {"state": "running"}}, {"range": {"lease_until": {"lt": now}}}]
        query = {"bool": {"filter": stale}}
        body = {"query": query, "size": 20, "sort": [{"created_at": "asc"}], "seq_no_primary_term": True}
        hits = self.client.search(index=self.names.node_tasks, body=body)["hits"]["hits"]
        ran = 0
        for h in hits:
            src = h["_source"]
            job = src["result"].get("job")
            if not job:  # recorded before forgets could be taken over: nothing to run it from
                continue
            tenant_id = src[TENANT_FIELD]
            status = self.status(tenant_id, src["task_id"])
            try:  # the claim: a renewed lease, if no one else renewed it first
                self._save(tenant_id, status, job, if_seq_no=h["_seq_no"], if_primary_term=h["_primary_term"])
            except ConflictError:
                continue
            log.warning("forget %s: taken over after its lease ran out", status.task_id)
            req = ForgetRequest.model_validate(job["request"])
            self._run(tenant_id, req, job["node_label"], int(job["version"]), status=status)
            ran += 1
        return ran

    def query(self, tenant_id: str, req: ForgetRequest, node_label: str | None) -> dict[str, Any]:
        node = [node_label] if node_label else []
        clauses = scope_filter(tenant_id, node, req.since, req.until, scope=forget_scope(req))
        if req.conversation_id:
            clauses.append({"term": {"conversation_id": req.conversation_id}})
        if req.source:
            clauses.append({"term": {"source": req.source}})
        return {"bool": {"filter": clauses}}

    def run(
        self, tenant_id: str, req: ForgetRequest, node_label: str | None, version: int, *, status: ForgetStatus
    ) -> ForgetStatus:
        """Tombstone every match, page by page, then the copies; the status is saved as it goes.
        Idempotent: run again from the start after a kill, it ends the same."""
        alias = self.placement.index(tenant_id)
        job = {"request": req.model_dump(mode="json"), "node_label": node_label, "version": version}
        before = status.created_at.isoformat()
        query = self.query(tenant_id, req, node_label)
        self._fence(tenant_id, req, node_label, version)
        self.client.indices.refresh(index=alias)  # a memory indexed a moment ago is found too
        after: list[Any] | None = None
        while True:
            page = TenantScope.of(self.placement, tenant_id)  # each page where the tenant's memories are now
            body: dict[str, Any] = {"query": query, "size": PAGE, "sort": [{"memory_id": "asc"}], "_source": False}
            if after:
                body["search_after"] = after
            hits = self.client.search(index=page.index, body=body, params=page.params())["hits"]["hits"]
            if not hits:
                break
            ids = [h["sort"][0] for h in hits]
            after = hits[-1]["sort"]
            entries = tombstone_entries(tenant_id, ids, version)
            outcomes = write_versioned(self.client, page.index, entries, refresh=False)
            status.memories += sum(1 for o in outcomes if o.ok)
            old = {"range": {"version": {"lte": version}}}  # a version written after the forget stays
            status.history += self._delete(self.names.memory_history, tenant_id, {"terms": {"memory_id": ids}}, old)
            either = {"bool": {"should": [{"terms": {"memory_id": ids}}, {"terms": {"chunk_of": ids}}]}}
            earlier = {"range": {"created_at": {"lte": before}}}
            status.dead_letters += self._delete(self.names.dead_letters, tenant_id, either, earlier)
            self.forgotten(tenant_id, ids)
            self._save(tenant_id, status, job)
        if whole_tenant(req):
            earlier = {"range": {"created_at": {"lte": before}}}
            status.history += self._delete(
                self.names.memory_history, tenant_id, {"range": {"version": {"lte": version}}}
            )
            status.dead_letters += self._delete(self.names.dead_letters, tenant_id, earlier)
            # records of writes accepted after the forget began stay: they are still to land
            status.task_records += self._delete(self.names.ingest_tasks, tenant_id, earlier)
            self.forgotten(tenant_id, None)
        if whole_owner(req):  # a user forgotten: every copy of theirs, whatever its memory id
            self._forget_owner(tenant_id, forget_scope(req), version, before, status=status)
        status.copies += self._forget_copies(tenant_id, query, version)
        self.client.indices.refresh(index=self.placement.index(tenant_id))
        status.state, status.finished_at = "succeeded", datetime.now(UTC)
        self._save(tenant_id, status, job)
        return status

    def _run(
        self, tenant_id: str, req: ForgetRequest, node_label: str | None, version: int, *, status: ForgetStatus
    ) -> None:
        try:
            self.run(tenant_id, req, node_label, version, status=status)
        except Exception as exc:  # recorded on the task, never dropped
            log.exception("forget %s failed", status.task_id)
            status.state, status.error, status.finished_at = "failed", f"{type(exc).__name__}: {exc}", datetime.now(UTC)
            try:
                job = {"request": req.model_dump(mode="json"), "node_label": node_label, "version": version}
                self._save(tenant_id, status, job)
            except Exception:
                log.error("forget %s: the failure could not be recorded", status.task_id)

    def _fence(self, tenant_id: str, req: ForgetRequest, node_label: str | None, version: int) -> None:
        """Before the search: the fence that makes a queued write this forget covers superseded
        (``ingest/fences.py``); none for a forget bounded in time."""
        if req.since is not None or req.until is not None:
            return
        filters = {**req.model_dump(include=set(FENCED)), "node": node_label}
        entries = tombstone_entries(tenant_id, [fence_key(filters)], version)
        [outcome] = write_versioned(self.client, self.placement.index(tenant_id), entries, refresh=False)
        if not (outcome.ok or outcome.superseded):  # superseded: a later forget's fence already stands
            raise RuntimeError(f"the forget's fence was not stored: {outcome.reason}")

    def _forget_copies(self, tenant_id: str, query: dict[str, Any], version: int) -> int:
        """The matches in every index that holds copies of the tenant without serving it (kept
        for rollback, left by a killed move: ``Placement.stale_copies``), deleted outright where
        older than the forget: no write lands there, so no tombstone is needed."""
        return forget_older_copies(
            self.client, self.placement.stale_copies(tenant_id), tenant_id, query, version=version
        )

    def _forget_owner(
        self, tenant_id: str, scope: UserScope, version: int, before: str, *, status: ForgetStatus
    ) -> None:
        """The rest of a user (or agent): history and dead letters that name them, the records of
        ended tasks that wrote for them, the records of their recalls (feedback), and the keys
        held to them (the route deleted those first; again here, so a forget taken over after
        its API was killed between the two still ends with none)."""
        earlier = {"range": {"created_at": {"lte": before}}}
        if scope.user_id is not None:
            self._delete(self.names.keys, tenant_id, {"term": {"user_id": scope.user_id}})
        status.history += self._delete(
            self.names.memory_history, tenant_id, *scope.clauses(), {"range": {"version": {"lte": version}}}
        )
        status.dead_letters += self._delete(self.names.dead_letters, tenant_id, *scope.clauses(), earlier)
        if jobs := jobs_of(scope):  # an unfinished task's record stays: its job still runs (and is superseded)
            ended = {"terms": {"state": [TaskState.succeeded.value, TaskState.failed.value]}}
            status.task_records += self._delete(self.names.ingest_tasks, tenant_id, *jobs, ended, earlier)
        status.feedback += int(self.owner_forgotten(tenant_id, scope) or 0)

    def _delete(self, index: str, tenant_id: str, *clauses: dict[str, Any]) -> int:
        filters: list[dict[str, Any]] = [tenant_term(tenant_id), *clauses]
        r = self.client.delete_by_query(
            index=index,
            body={"query": {"bool": {"filter": filters}}},
            params={"refresh": "true", "conflicts": "proceed"},
        )
        return int(r.get("deleted", 0))
