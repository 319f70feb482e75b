"""What the API holds for ingestion (``IngestService``): writes, edits, deletes and forgets put on
the queue of its mode, the stored memories read and kept in their history. Which mode and queue a
process gets is ``ingest/modes.py``'s choice."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from brain_search_client.models.memory import MemoryAbout
from opensearchpy.exceptions import TransportError

from brain_search.config import Settings
from brain_search.errors import Conflict, InvalidInput, NotFound, PreconditionFailed
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.edits import body_field, check_if_match, patched_source, replacement, text_edit
from brain_search.ingest.forget import ForgetRequest, ForgetStatus, Forgetter, check_forget
from brain_search.ingest.history import HistoryStore
from brain_search.ingest.inprocess import InProcessQueue
from brain_search.ingest.memories import MemoryStore, Stored, memory_out
from brain_search.ingest.models import (
    MAX_IMPORTED_VERSIONS,
    IngestJob,
    IngestRequest,
    MemoryItem,
    MemoryOut,
    MemoryPatch,
    MemoryReplace,
    ReplaceAccepted,
    TaskAccepted,
    TaskState,
    TaskStatus,
)
from brain_search.ingest.prepare import NodeLookup, prepare_items
from brain_search.ingest.versions import VersionClock
from brain_search.store.scope import UserScope


class IngestQueue(Protocol):
    """Where jobs go. ``status`` raises NotFound for an unknown task or another tenant's."""

    def submit(self, job: IngestJob) -> None: ...

    def status(self, tenant_id: str, task_id: str) -> TaskStatus: ...

    def pending(self, tenant_id: str, memory_id: str) -> bool:
        """Whether an unfinished task of the tenant carries this memory."""
        ...

    def depth(self) -> float:
        """Tasks waiting (NaN when the queue does not answer)."""
        ...

    def outcome_sums(self) -> dict[str, float]:
        """Memories by outcome over the tasks this queue knows of."""
        ...

    def close(self) -> None: ...


@dataclass
class IngestService:
    queue: IngestQueue
    dead_letters: DeadLetterStore
    memories: MemoryStore
    history: HistoryStore
    forgetter: Forgetter
    mode: str  # "embedded" | "workers"
    versions: VersionClock = field(default_factory=VersionClock)
    events: Callable[[str, int], None] = field(default=lambda event, n: None)
    forgotten: Callable[[str, list[str] | None], object] = field(default=lambda tenant, ids: None)
    """told of memories deleted (None: every memory of the tenant), so what refers to them goes too"""

    def set_events(self, events: Callable[[str, int], None]) -> None:
        """Where ingest events (accepted, and in embedded mode indexed / failed / superseded) are counted."""
        self.events = events
        if isinstance(self.queue, InProcessQueue):
            self.queue.events = events

    def set_forgotten(
        self,
        forgotten: Callable[[str, list[str] | None], object],
        owner_forgotten: Callable[[str, UserScope], int] | None = None,
    ) -> None:
        """Who is told of deleted memories (the feedback kept on recalls that showed them), and of a
        user forgotten (``owner_forgotten``: the records of their recalls go)."""
        self.forgotten = forgotten
        self.forgetter.forgotten = forgotten
        if owner_forgotten is not None:
            self.forgetter.owner_forgotten = owner_forgotten

    def close(self) -> None:
        self.queue.close()

    # ------------------------------------------------------------------ verbs (HTTP, MCP, CLI)
    def write(self, tenant_id: str, items: list[MemoryItem], refresh: bool) -> IngestJob:
        """The one way a memory is written, whatever the door (POST, PUT, a text PATCH, MCP,
        `brain-search ingest` in-process): the job is stamped with its acceptance version, so a
        delete accepted after it wins wherever the job waits, then queued."""
        job = IngestJob(
            task_id=uuid.uuid4().hex, tenant_id=tenant_id, items=items, refresh=refresh, version=self.versions.next()
        )
        self.queue.submit(job)
        self.events("accepted", len(items))
        return job

    def accept(self, tenant_id: str, req: IngestRequest, settings: Settings, nodes: NodeLookup) -> TaskAccepted:
        """Validate (InvalidInput names the field; nothing is queued then) and queue a write."""
        items = prepare_items(req, tenant_id, settings, nodes)
        self._same_owners(tenant_id, req, items)
        if req.history:
            self._keep_imported(tenant_id, req, {it.memory_id for it in items})
        job = self.write(tenant_id, items, req.refresh)
        return TaskAccepted(task_id=job.task_id, submitted=len(items), memory_ids=[it.memory_id for it in items])

    def _keep_imported(self, tenant_id: str, req: IngestRequest, ids: set[str]) -> None:
        """The earlier versions a write carries (an import of an export), kept before the write is
        queued; each must be of a memory of the write."""
        history = req.history or {}
        for memory_id, versions in history.items():
            if memory_id not in ids:
                raise InvalidInput("history", f"{memory_id!r} is no memory of this write: name it by its memory_id")
            if len(versions) > MAX_IMPORTED_VERSIONS:
                raise InvalidInput(
                    "history", f"{memory_id!r} carries {len(versions)} versions (at most {MAX_IMPORTED_VERSIONS})"
                )
        self.history.keep_imported(tenant_id, history)

    def _same_owners(self, tenant_id: str, req: IngestRequest, items: list[MemoryItem]) -> None:
        """A write of a memory id the caller chose must not take a stored memory from its owner
        (another user's, another agent's, or the organisation's shared one): 409 naming the
        memory. A derived id includes its owner, so only chosen ids are looked up (no round trip
        for a write without them)."""
        chosen = {m.memory_id: i for i, m in enumerate(req.memories) if m.memory_id}
        if not chosen:
            return
        owners: dict[str, UserScope] = {}
        where: dict[str, int] = {}
        for it in items:
            parent = (it.metadata or {}).get("chunk_of")
            key = parent if isinstance(parent, str) and parent in chosen else it.memory_id
            if key in chosen:
                owners[it.memory_id] = UserScope(it.user_id, it.agent_id)
                where[it.memory_id] = chosen[key]
        taken = self.memories.held_elsewhere(tenant_id, owners)
        if taken:
            field = "memory_id" if req.single else f"memories.{where[taken[0]]}.memory_id"
            raise Conflict(
                f"{field}: memory {taken[0]!r} is stored for another owner (user_id / agent_id): "
                "a write never moves a memory to another user; choose another id",
                memory_id=taken[0],
            )

    def replace(
        self,
        tenant_id: str,
        memory_id: str,
        body: MemoryReplace,
        settings: Settings,
        *,
        nodes: NodeLookup,
        if_match: str | None = None,
        scope: UserScope | None = None,
    ) -> ReplaceAccepted:
        """PUT: the stored memory (404 otherwise, and for one ``scope`` does not own) becomes
        ``body``, re-embedded through a task."""
        own = scope.own() if scope is not None else None
        self._no_queued_write(tenant_id, memory_id)
        at = self.memories.read(tenant_id, memory_id, scope=own)
        check_if_match(if_match, at.version)
        return self._requeue(
            tenant_id,
            at,
            "put",
            replacement(memory_id, body, at.source),
            settings=settings,
            nodes=nodes,
            if_match=if_match,
        )

    def edit(
        self,
        tenant_id: str,
        memory_id: str,
        body: MemoryPatch,
        settings: Settings,
        *,
        nodes: NodeLookup,
        if_match: str | None = None,
        scope: UserScope | None = None,
    ) -> MemoryOut | ReplaceAccepted:
        """PATCH: change the fields ``body`` names and keep the others. A new text is re-embedded
        through a task (``ReplaceAccepted``); other changes are stored at once (``MemoryOut``).

        An edit is compare-and-set on the version it read (the engine's ``if_seq_no``; a queued
        text edit on its claim's version, which a move keeps): a change,
        a delete or another edit stored since makes it a 412 (with ``If-Match``) or a 409, never
        an overwrite; so is a write of the memory still queued."""
        if not body.model_fields_set - {"create_nodes", "refresh"}:
            fields = ["content", *MemoryAbout.model_fields]
            raise InvalidInput("body", f"nothing to change: send {', '.join(fields[:-1])} or {fields[-1]}")
        own = scope.own() if scope is not None else None
        self._no_queued_write(tenant_id, memory_id)
        at = self.memories.read(tenant_id, memory_id, scope=own)
        check_if_match(if_match, at.version)
        src = at.source
        if "content" in body.model_fields_set:
            return self._requeue(
                tenant_id,
                at,
                "patch",
                text_edit(memory_id, src, body),
                settings=settings,
                nodes=nodes,
                if_match=if_match,
            )
        new = patched_source(tenant_id, src, body, settings, nodes=nodes)
        self.history.keep(tenant_id, memory_out(_without_vector(src), at.version), "patch")
        now = self.memories.write_if(tenant_id, memory_id, new, at)
        if now is None:
            self._lost(tenant_id, memory_id, if_match)
        return memory_out(_without_vector(new), now.version)

    def _requeue(
        self,
        tenant_id: str,
        at: Stored,
        how: str,
        req: IngestRequest,
        *,
        settings: Settings,
        nodes: NodeLookup,
        if_match: str | None,
    ) -> ReplaceAccepted:
        """A stored memory written anew (PUT, text PATCH): the version it replaces to its history.
        The memory is claimed first (written again as it is, compare-and-set on what was read), and
        the new text is written compare-and-set on the claim: of two edits of one version one
        loses here (412 / 409), and a delete or a write stored before the task makes the task's
        write superseded."""
        try:
            items = prepare_items(req, tenant_id, settings, nodes)
        except InvalidInput as exc:
            raise body_field(exc) from None
        assert len(items) == 1, "an edit is one memory"
        memory_id = items[0].memory_id
        self.history.keep(tenant_id, memory_out(_without_vector(at.source), at.version), how)
        claim = self.memories.write_if(tenant_id, memory_id, at.source, at, refresh=False)
        if claim is None:
            self._lost(tenant_id, memory_id, if_match)
        items = [items[0].model_copy(update={"if_version": claim.version})]
        job = self.write(tenant_id, items, req.refresh)
        # the task writes the claim's version + 1, only while the claim is what is stored
        return ReplaceAccepted(task_id=job.task_id, submitted=1, memory_ids=[memory_id], version=claim.version + 1)

    def _no_queued_write(self, tenant_id: str, memory_id: str) -> None:
        """An edit of a memory whose write is still queued would be made on the version before it
        (and lose to it, or hide it): refused until that task has ended."""
        if self.queue.pending(tenant_id, memory_id):
            raise Conflict(
                "a write of this memory is still queued: change it once that task has ended", memory_id=memory_id
            )

    def _lost(self, tenant_id: str, memory_id: str, if_match: str | None) -> NoReturn:
        """An edit whose compare-and-set failed: something was stored since it read the memory."""
        try:
            now = self.memories.read(tenant_id, memory_id, with_vector=False)
        except NotFound:
            # deleted meanwhile: the version this edit put in the history goes with the rest
            self.history.purge(tenant_id, memory_id)
            raise Conflict("the memory was deleted while this change was made", memory_id=memory_id) from None
        if if_match is not None:
            raise PreconditionFailed(if_match, now.version)
        raise Conflict(
            "the memory changed while this change was made: read it again", memory_id=memory_id, version=now.version
        )

    def delete(self, tenant_id: str, memory_id: str, scope: UserScope | None = None) -> bool:
        """Delete one memory with its pieces, dead letters and history. True: it was stored;
        False: not stored yet, but an unfinished task carries it (that write will not land).
        NotFound: neither, or it is stored for an owner ``scope`` does not name."""
        if scope is not None and not scope.everyone:
            try:
                self.memories.read(tenant_id, memory_id, with_vector=False, scope=scope.own())
            except NotFound:
                if self.memories.is_live(tenant_id, memory_id):
                    raise  # stored, and someone else's: not found for this caller
        version = self.versions.next()
        pending = self.queue.pending(tenant_id, memory_id)  # before the tombstone: a task ending now counts
        deletion = self.memories.delete(tenant_id, memory_id, version, pending)
        copies = self.dead_letters.purge(tenant_id, memory_id=memory_id)
        copies += self.history.purge(tenant_id, memory_id)
        self.forgotten(tenant_id, [memory_id])
        if deletion.stored or (copies and not pending):  # a dead-lettered memory's copies count too
            return True
        if pending:
            return False
        raise NotFound("memory", memory_id)

    def wait(self, tenant_id: str, task_id: str, timeout_s: float, poll_s: float = 0.05) -> TaskStatus:
        """The task's status once it has ended (``succeeded`` or ``failed``), or as it stands after
        ``timeout_s``. With ``refresh`` its memories are searchable when it has succeeded."""
        deadline = time.monotonic() + timeout_s
        while True:
            status = self.queue.status(tenant_id, task_id)
            left = deadline - time.monotonic()
            if status.state in (TaskState.succeeded, TaskState.failed) or left <= 0:
                return status
            time.sleep(min(poll_s, left))
            poll_s = min(poll_s * 1.5, 0.5)

    def forget(self, tenant_id: str, req: ForgetRequest, nodes: NodeLookup) -> ForgetStatus:
        check_forget(req)
        label = None
        if req.node:
            try:
                label = nodes.get(tenant_id, req.node).label
            except NotFound:
                raise InvalidInput("node", f"unknown node {req.node!r}") from None
        return self.forgetter.start(tenant_id, req, label, self.versions.next())

    def forget_subtree(self, tenant_id: str, label: str) -> str:
        """A cascading node delete's memories (``graph_ops.delete_node``): forgotten like a
        ``POST /v1/forget`` of the node, tombstones, history and dead letters included; returns
        the forget's task id."""
        return self.forgetter.start(tenant_id, ForgetRequest(node=label), label, self.versions.next()).task_id

    def purge_expired(self, settings: Settings) -> None:
        """Start background purges of expired tombstones and dead letters (never raises: the
        next start tries again)."""
        purge_expired(self.memories, self.dead_letters, settings)


def _without_vector(source: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in source.items() if k != "embedding"}


def purge_expired(memories: MemoryStore, dead_letters: DeadLetterStore, settings: Settings) -> None:
    dead_letters.purge_expired(settings.dead_letter_ttl_s)
    with suppress(TransportError, OSError):
        memories.purge_tombstones(settings.tombstone_ttl_s)
