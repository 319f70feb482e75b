# Generated from _async/memories.py by client/scripts/unasync.py: edit that file, then run the script.
"""Memories: write (one, many, an import), read (one, a page, every page, an export), change,
delete, history, forget; and the tasks that carry writes."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Unpack

from brain_search_client._common import (
    ENDED,
    all_with_ids,
    body,
    build,
    check_stored,
    export_line,
    given,
    if_match,
    params,
    route,
    segment,
)
from brain_search_client._sync.transport import Transport, sleep
from brain_search_client.errors import WaitTimeout
from brain_search_client.models.forget import ForgetRequest, ForgetStatus
from brain_search_client.models.ingest import (
    DeadLetterPage,
    DeadLettersPurged,
    DeleteAccepted,
    HistoryPurged,
    IngestRequest,
    MemoryHistory,
    MemoryIn,
    MemoryOut,
    MemoryPage,
    MemoryPatch,
    MemoryReplace,
    ReplaceAccepted,
    TaskStatus,
    WriteOutcome,
)
from brain_search_client.typed import MemoryChanges, MemoryFields, ReadScope, ReplaceFields

WAIT_S = 60.0
"""how long a write waits to be searchable by default (seconds)"""


class Tasks:
    """The tasks that carry writes (``GET /v1/tasks/{task_id}``)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    @route("GET", "/v1/tasks/{task_id}")
    def get(self, task_id: str) -> TaskStatus:
        r = self._t.request("GET", f"/v1/tasks/{segment(task_id)}")
        return TaskStatus.model_validate(r.json())

    def wait(self, task_id: str, *, timeout: float = WAIT_S, poll: float = 0.1) -> TaskStatus:
        """The task once it has ended (``succeeded`` or ``failed``); ``WaitTimeout`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.get(task_id)
            if status.state in ENDED:
                return status
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"task {task_id} still {status.state.value} after {timeout:.0f} s", status)
            sleep(poll)
            poll = min(poll * 1.5, 1.0)


class Memories:
    """``client.memories``: one method per route of ``/v1/memories`` and ``/v1/forget``."""

    def __init__(self, transport: Transport, tasks: Tasks) -> None:
        self._t = transport
        self._tasks = tasks

    # ------------------------------------------------------------------ writes
    @route("POST", "/v1/memories")
    def add(
        self,
        content: str,
        *,
        wait: bool = False,
        timeout: float = WAIT_S,
        chunk: bool = False,
        refresh: bool = False,
        create_nodes: bool = False,
        **fields: Unpack[MemoryFields],
    ) -> WriteOutcome:
        """Write one memory. ``wait``: answer once it is searchable (``WriteFailed`` if it was not
        stored, ``WaitTimeout`` after ``timeout`` s); otherwise once it is queued. Retried safely
        when it names its ``memory_id`` (a derived id is not retried after an ambiguous failure)."""
        memory = build(MemoryIn, {"content": content, **fields})
        request = build(
            IngestRequest, {"memories": [memory], "chunk": chunk, "refresh": refresh, "create_nodes": create_nodes}
        )
        return self._write(request, single=True, wait=wait, timeout=timeout)

    def add_many(
        self,
        memories: Iterable[MemoryIn | Mapping[str, Any]],
        *,
        wait: bool = False,
        timeout: float = WAIT_S,
        user_id: str | None = None,
        agent_id: str | None = None,
        chunk: bool = False,
        refresh: bool = False,
        create_nodes: bool = False,
        history: Mapping[str, Sequence[Any]] | None = None,
    ) -> WriteOutcome:
        """Write a batch in one task (at most the API's batch size, 1,000 by default); ``user_id``
        / ``agent_id``: the owner of each memory that names none; ``history``: earlier versions
        by memory id (what an export keeps)."""
        items = [m if isinstance(m, MemoryIn) else build(MemoryIn, m) for m in memories]
        data = given(user_id=user_id, agent_id=agent_id, history=history)
        data |= {"memories": items, "chunk": chunk, "refresh": refresh, "create_nodes": create_nodes}
        return self._write(build(IngestRequest, data), single=False, wait=wait, timeout=timeout)

    def _write(self, request: IngestRequest, *, single: bool, wait: bool, timeout: float) -> WriteOutcome:
        payload = body(request)
        if single:  # one memory: its fields at the top level, as its errors name them
            (memory,) = payload.pop("memories")
            payload = {**payload, **memory}
        query = params(wait=True, timeout=timeout) if wait else None
        r = self._t.request(
            "POST",
            "/v1/memories",
            json=payload,
            params=query,
            idempotent=all_with_ids(request.memories),
            timeout=timeout + 30 if wait else None,
        )
        outcome = WriteOutcome.model_validate(r.json())
        if wait:
            if outcome.state not in ENDED:
                raise WaitTimeout(f"task {outcome.task_id} still {outcome.state.value} after {timeout:.0f} s", outcome)
            check_stored(outcome)
        return outcome

    def import_(
        self, lines: Iterable[Mapping[str, Any]], *, batch_size: int = 500, create_nodes: bool = True
    ) -> builtins.list[WriteOutcome]:
        """Write memories as ``export`` gave them (each with its earlier versions), a batch at a
        time, each waited for; the nodes they name are created."""
        outcomes: builtins.list[WriteOutcome] = []
        batch: builtins.list[dict[str, Any]] = []
        history: dict[str, Any] = {}

        def flush() -> None:
            if batch:
                outcomes.append(self.add_many(batch, wait=True, create_nodes=create_nodes, history=history or None))
                batch.clear()
                history.clear()

        for line in lines:
            memory = dict(line)
            versions = memory.pop("history", None)
            if versions and memory.get("memory_id"):
                history[memory["memory_id"]] = versions
            batch.append(memory)
            if len(batch) >= batch_size:
                flush()
        flush()
        return outcomes

    @route("PATCH", "/v1/memories/{memory_id}")
    def update(
        self,
        memory_id: str,
        *,
        wait: bool = False,
        if_version: int | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        **changes: Unpack[MemoryChanges],
    ) -> MemoryOut | ReplaceAccepted:
        """Change the fields given and keep every other (PATCH). A new ``content`` is re-embedded
        through a task: ``ReplaceAccepted`` (``wait``: once searchable, the memory as stored);
        other fields change at once: the memory. ``if_version``: only if it is still the stored
        version (``PreconditionFailed`` otherwise)."""
        patch = build(MemoryPatch, {**changes, **({"refresh": True} if wait and "content" in changes else {})})
        r = self._t.request(
            "PATCH",
            f"/v1/memories/{segment(memory_id)}",
            json=body(patch),
            params=params(user_id=user_id, agent_id=agent_id),
            headers=if_match(if_version),
            idempotent=if_version is None,
        )
        if r.status_code == 202:
            accepted = ReplaceAccepted.model_validate(r.json())
            if not wait:
                return accepted
            check_stored(self._tasks.wait(accepted.task_id, timeout=WAIT_S))
            scope = ReadScope()
            if user_id is not None:
                scope["user_id"] = user_id
            if agent_id is not None:
                scope["agent_id"] = agent_id
            return self.get(memory_id, **scope)
        return MemoryOut.model_validate(r.json())

    @route("PUT", "/v1/memories/{memory_id}")
    def replace(
        self,
        memory_id: str,
        content: str,
        *,
        wait: bool = False,
        if_version: int | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        **fields: Unpack[ReplaceFields],
    ) -> ReplaceAccepted:
        """Replace a stored memory by these fields (PUT): a field not given is cleared; its owner
        stays. Re-embedded through a task (``wait``: returns once the new text is searchable)."""
        new = build(MemoryReplace, {**fields, "content": content, **({"refresh": True} if wait else {})})
        r = self._t.request(
            "PUT",
            f"/v1/memories/{segment(memory_id)}",
            json=body(new),
            params=params(user_id=user_id, agent_id=agent_id),
            headers=if_match(if_version),
            idempotent=if_version is None,
        )
        accepted = ReplaceAccepted.model_validate(r.json())
        if wait:
            check_stored(self._tasks.wait(accepted.task_id, timeout=WAIT_S))
        return accepted

    @route("DELETE", "/v1/memories/{memory_id}")
    def delete(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> DeleteAccepted | None:
        """Delete a memory (its pieces, history and dead letters too): None when it was stored and
        is gone from search; ``DeleteAccepted`` when it was not stored yet and its queued write
        will not land. ``NotFound``: neither; ``Conflict``: a later write is already stored."""
        r = self._t.request(
            "DELETE", f"/v1/memories/{segment(memory_id)}", params=params(user_id=user_id, agent_id=agent_id)
        )
        return DeleteAccepted.model_validate(r.json()) if r.status_code == 202 else None

    # ------------------------------------------------------------------ reads
    @route("GET", "/v1/memories/{memory_id}")
    def get(self, memory_id: str, **scope: Unpack[ReadScope]) -> MemoryOut:
        """One memory (``version``: send it as ``if_version`` to change it only if unchanged)."""
        r = self._t.request("GET", f"/v1/memories/{segment(memory_id)}", params=params(**scope))
        return MemoryOut.model_validate(r.json())

    @route("GET", "/v1/memories")
    def list(
        self,
        *,
        node: str | None = None,
        conversation_id: str | None = None,
        source: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        history: bool = False,
        **scope: Unpack[ReadScope],
    ) -> MemoryPage:
        """A page of memories in id order (``next_cursor``: pass it as ``cursor`` for the next)."""
        query = params(
            node=node,
            conversation_id=conversation_id,
            source=source,
            since=since,
            until=until,
            limit=limit,
            cursor=cursor,
            history=history or None,
            **scope,
        )
        r = self._t.request("GET", "/v1/memories", params=query)
        return MemoryPage.model_validate(r.json())

    def iter(
        self,
        *,
        node: str | None = None,
        conversation_id: str | None = None,
        source: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        page_size: int = 500,
        **scope: Unpack[ReadScope],
    ) -> Iterator[MemoryOut]:
        """Every memory matching the filters, page after page."""
        filters: dict[str, Any] = given(node=node, conversation_id=conversation_id, source=source, since=since)
        filters |= given(until=until)
        cursor: str | None = None
        while True:
            page = self.list(limit=page_size, cursor=cursor, **filters, **scope)
            yield from page.memories
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def export(
        self,
        *,
        node: str | None = None,
        conversation_id: str | None = None,
        source: str | None = None,
        page_size: int = 1000,
        **scope: Unpack[ReadScope],
    ) -> Iterator[dict[str, Any]]:
        """Every memory matching the filters as a line ``import_`` (and ``brain-search import``)
        reads back, with its earlier versions."""
        filters: dict[str, Any] = given(node=node, conversation_id=conversation_id, source=source)
        cursor: str | None = None
        while True:
            page = self.list(limit=page_size, cursor=cursor, history=True, **filters, **scope)
            versions = page.history or {}
            for memory in page.memories:
                yield export_line(memory, versions.get(memory.memory_id, []))
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    @route("GET", "/v1/memories/{memory_id}/history")
    def history(self, memory_id: str, **scope: Unpack[ReadScope]) -> MemoryHistory:
        """The versions PUT and PATCH replaced, newest first."""
        r = self._t.request("GET", f"/v1/memories/{segment(memory_id)}/history", params=params(**scope))
        return MemoryHistory.model_validate(r.json())

    @route("DELETE", "/v1/memories/{memory_id}/history")
    def purge_history(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> HistoryPurged:
        r = self._t.request(
            "DELETE", f"/v1/memories/{segment(memory_id)}/history", params=params(user_id=user_id, agent_id=agent_id)
        )
        return HistoryPurged.model_validate(r.json())

    # ------------------------------------------------------------------ forget
    @route("POST", "/v1/forget")
    def forget(
        self,
        *,
        conversation_id: str | None = None,
        node: str | None = None,
        source: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        all: bool = False,
        user_id: str | None = None,
        agent_id: str | None = None,
        wait: bool = False,
        timeout: float = WAIT_S,
    ) -> ForgetStatus:
        """Forget every memory matching the filters (``all=True``: every memory of the tenant, or
        of ``user_id``), with their pieces, history and dead letters, as a task (``wait``: until
        it has ended)."""
        request = build(
            ForgetRequest,
            given(conversation_id=conversation_id, node=node, source=source, since=since, until=until)
            | given(user_id=user_id, agent_id=agent_id)
            | ({"all": True} if all else {}),
        )
        r = self._t.request("POST", "/v1/forget", json=body(request), idempotent=True)
        status = ForgetStatus.model_validate(r.json())
        return self.wait_forget(status.task_id, timeout=timeout) if wait else status

    @route("GET", "/v1/forget/{task_id}")
    def forget_status(self, task_id: str) -> ForgetStatus:
        r = self._t.request("GET", f"/v1/forget/{segment(task_id)}")
        return ForgetStatus.model_validate(r.json())

    def wait_forget(self, task_id: str, *, timeout: float = WAIT_S, poll: float = 0.1) -> ForgetStatus:
        """A forget once it has ended; ``WaitTimeout`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.forget_status(task_id)
            if status.state != "running":
                return status
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"forget {task_id} still running after {timeout:.0f} s", status)
            sleep(poll)
            poll = min(poll * 1.5, 1.0)


class DeadLetters:
    """``client.dead_letters``: memories that could not be indexed."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    @route("GET", "/v1/dead-letters")
    def list(
        self,
        *,
        task_id: str | None = None,
        memory_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> DeadLetterPage:
        query = params(task_id=task_id, memory_id=memory_id, limit=limit, offset=offset, user_id=user_id)
        r = self._t.request("GET", "/v1/dead-letters", params=query | params(agent_id=agent_id))
        return DeadLetterPage.model_validate(r.json())

    @route("DELETE", "/v1/dead-letters")
    def purge(
        self,
        *,
        task_id: str | None = None,
        memory_id: str | None = None,
        before: datetime | str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> DeadLettersPurged:
        query = params(task_id=task_id, memory_id=memory_id, before=before, user_id=user_id, agent_id=agent_id)
        r = self._t.request("DELETE", "/v1/dead-letters", params=query)
        return DeadLettersPurged.model_validate(r.json())
