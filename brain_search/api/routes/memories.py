"""Ingestion API: queue memories, follow tasks, read/delete one memory, list dead letters."""

from __future__ import annotations

import time
from datetime import UTC
from typing import Annotated

import anyio
from brain_search_client.models.inputs import EngineTime, EngineUntil
from brain_search_client.models.memory import OWNER_ID_PATTERN
from fastapi import APIRouter, Depends, Query, Response, status

from brain_search.api.deps import CallerDep, StateDep, TenantDep, WriterDep
from brain_search.errors import InvalidInput, NotFound
from brain_search.ingest.models import (
    DeadLetterPage,
    DeadLettersPurged,
    DeleteAccepted,
    IngestRequest,
    MemoryOut,
    MemoryPage,
    TaskAccepted,
    TaskState,
    TaskStatus,
    WriteOutcome,
)
from brain_search.ingest.service import IngestService
from brain_search.retrieval.engine.supersede import newer_versions
from brain_search.store.scope import scope_filter

router = APIRouter(prefix="/v1", tags=["memories"])
DEAD_LETTER_WINDOW = 10_000
DEFAULT_WAIT_S = 60.0
MAX_WAIT_S = 300.0
"""``POST /v1/memories?wait=true``: how long a write waits for its task, by default and at most"""
ENDED = (TaskState.succeeded, TaskState.failed)
SINGLE_PREFIX = "memories.0."  # the field of one memory sent at the top level, as a batch names it


async def get_ingest(state: StateDep) -> IngestService:
    return state.ingest


IngestDep = Annotated[IngestService, Depends(get_ingest)]
UserQuery = Annotated[
    str | None,
    Query(pattern=OWNER_ID_PATTERN, description="only this user's memories (a user's key: its own, always)"),
]
AgentQuery = Annotated[str | None, Query(pattern=OWNER_ID_PATTERN, description="only this agent's memories")]
SharedQuery = Annotated[
    bool, Query(description="with user_id: also the organisation's shared memories (those with no user)")
]


@router.post(
    "/memories",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        200: {"model": WriteOutcome, "description": "`wait=true`: the write's task has ended (see `searchable`)"},
        202: {"model": TaskAccepted, "description": "queued (`wait=true`: WriteOutcome, still running at the timeout)"},
    },
)
async def post_memories(
    body: IngestRequest,
    caller: WriterDep,
    state: StateDep,
    ingest: IngestDep,
    *,
    wait: Annotated[
        bool, Query(description="answer once the write is searchable or has failed (its task ended), not queued")
    ] = False,
    timeout: Annotated[
        float, Query(gt=0, le=MAX_WAIT_S, description="with wait: seconds at most, then 202 with the task as it is")
    ] = DEFAULT_WAIT_S,
) -> Response:
    """Queue one memory (its fields at the top level) or a batch (``memories``). Everything is
    validated first: on any error the answer is 422 naming the field (``content`` for one memory,
    ``memories.3.content`` in a batch), and nothing is queued. ``user_id`` / ``agent_id``: whose
    memory it is (a batch's: each memory's that names none; a user's key: its user, and 403
    naming the field for another). ``wait=true``: written with ``refresh`` and answered once its
    task has ended: 200 with the outcome (``searchable``: a recall finds every memory of it), or
    202 with the task as it stands after ``timeout`` seconds; no task to poll."""
    body = caller.write(body)
    if wait:
        body = body.replaced(refresh=True)
    try:
        accepted = await anyio.to_thread.run_sync(ingest.accept, caller.tenant_id, body, state.settings, state.graph)
    except InvalidInput as exc:
        if body.single and exc.field.startswith(SINGLE_PREFIX):
            raise InvalidInput(exc.field.removeprefix(SINGLE_PREFIX), exc.reason) from None
        raise
    if not wait:
        return Response(accepted.model_dump_json(), status_code=status.HTTP_202_ACCEPTED, media_type="application/json")
    outcome = await written(ingest, caller.tenant_id, accepted, timeout)
    code = status.HTTP_200_OK if outcome.state in ENDED else status.HTTP_202_ACCEPTED
    return Response(outcome.model_dump_json(), status_code=code, media_type="application/json")


async def written(ingest: IngestService, tenant_id: str, accepted: TaskAccepted, timeout_s: float) -> WriteOutcome:
    """The write once its task has ended, or as it stands after ``timeout_s``: the status is read
    on a worker thread between short sleeps on the event loop, so a waiting write holds no thread."""
    deadline = time.monotonic() + timeout_s
    poll = 0.02
    while True:
        task = await anyio.to_thread.run_sync(ingest.queue.status, tenant_id, accepted.task_id)
        left = deadline - time.monotonic()
        if task.state in ENDED or left <= 0:
            break
        await anyio.sleep(min(poll, left))
        poll = min(poll * 1.5, 0.25)
    searchable = task.state is TaskState.succeeded and task.indexed == task.submitted
    return WriteOutcome(**task.model_dump(), memory_ids=accepted.memory_ids, searchable=searchable)


@router.get("/memories")
def list_memories(
    caller: CallerDep,
    state: StateDep,
    ingest: IngestDep,
    user_id: UserQuery = None,
    *,
    agent_id: AgentQuery = None,
    include_shared: SharedQuery = False,
    node: str | None = None,
    conversation_id: str | None = None,
    source: str | None = None,
    since: EngineTime | None = None,
    until: EngineUntil | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
    history: Annotated[bool, Query(description="also each memory's earlier versions (what an export keeps)")] = False,
) -> MemoryPage:
    """The caller's memories in id order, filtered by user (and agent), node subtree, conversation,
    source and time range, a page at a time (``next_cursor``). `brain-search export` reads it."""
    tenant = caller.tenant_id
    scope = caller.scope(user_id, agent_id, include_shared)
    label = None
    if node:
        try:
            label = state.graph.get(tenant, node).label
        except NotFound:
            raise InvalidInput("node", f"unknown node {node!r}", where="query") from None
    filters = scope_filter(tenant, [label] if label else [], since, until, scope=scope)
    filters += [{"term": {k: v}} for k, v in (("conversation_id", conversation_id), ("source", source)) if v]
    page, more = ingest.memories.list(tenant, filters, limit, cursor)
    versions = ingest.history.of_many(tenant, [m.memory_id for m in page], scope=scope) if history else None
    return MemoryPage(memories=page, next_cursor=more, history=versions)


@router.get("/tasks/{task_id}")
def get_task(task_id: str, tenant: TenantDep, ingest: IngestDep) -> TaskStatus:
    """State and counts of an ingest task of the caller's tenant (another tenant's: 404)."""
    return ingest.queue.status(tenant, task_id)


@router.get("/memories/{memory_id:path}")
def get_memory(
    memory_id: str,
    response: Response,
    caller: CallerDep,
    ingest: IngestDep,
    *,
    user_id: UserQuery = None,
    agent_id: AgentQuery = None,
    include_shared: SharedQuery = False,
) -> MemoryOut:
    """One memory; its version is also the ``ETag`` (send it as ``If-Match`` on PUT / PATCH).
    ``superseded_by``: the live memory that replaces it, if one does (recall leaves it out).
    Another user's memory is a 404, as an unknown one."""
    tenant = caller.tenant_id
    scope = caller.scope(user_id, agent_id, include_shared)
    memory = ingest.memories.get(tenant, memory_id, scope)
    store = ingest.memories
    newer = newer_versions(store.client, store.scope(tenant, scope), [memory_id])
    memory.superseded_by = newer.get(memory_id)
    response.headers["ETag"] = f'"{memory.version}"'
    return memory


@router.delete(
    "/memories/{memory_id:path}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={202: {"model": DeleteAccepted}, 404: {}, 409: {}},
)
def delete_memory(
    memory_id: str, caller: WriterDep, ingest: IngestDep, user_id: UserQuery = None, *, agent_id: AgentQuery = None
) -> Response:
    """Delete one memory (and the pieces of a chunked one, and its dead letters). 204: it was
    stored and is gone from search when this returns. 202: it is not stored yet but a task still
    carries it; that write will not land. 404: neither. A write accepted before the delete never
    brings the memory back; one accepted after it does (409 if it is already stored). With a
    user's key (or ``user_id``), another user's stored memory is a 404 and stays."""
    if ingest.delete(caller.tenant_id, memory_id, caller.scope(user_id, agent_id)):
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    body = DeleteAccepted(memory_id=memory_id)
    return Response(body.model_dump_json(), status_code=status.HTTP_202_ACCEPTED, media_type="application/json")


@router.get("/dead-letters")
def get_dead_letters(
    caller: CallerDep,
    ingest: IngestDep,
    user_id: UserQuery = None,
    agent_id: AgentQuery = None,
    *,
    task_id: str | None = None,
    memory_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000)] = 0,
) -> DeadLetterPage:
    """Memories that could not be indexed, newest first, with the reason and the payload."""
    if offset + limit > DEAD_LETTER_WINDOW:
        # the engine's result window: past it the search would fail (a 400 inside, a 5xx outside)
        raise InvalidInput(
            "offset", f"offset + limit must be at most {DEAD_LETTER_WINDOW} (narrow by task_id)", where="query"
        )
    scope = caller.scope(user_id, agent_id)
    return ingest.dead_letters.list(
        caller.tenant_id, task_id=task_id, memory_id=memory_id, limit=limit, offset=offset, scope=scope
    )


@router.delete("/dead-letters")
def purge_dead_letters(
    caller: WriterDep,
    ingest: IngestDep,
    user_id: UserQuery = None,
    agent_id: AgentQuery = None,
    *,
    task_id: str | None = None,
    memory_id: str | None = None,
    before: EngineTime | None = None,
) -> DeadLettersPurged:
    """Delete the caller's dead letters: all of them, or those of a task, a memory (with its
    pieces) or created before a time. They also expire on their own (``BRAIN_DEAD_LETTER_TTL_S``)."""
    if before is not None and before.tzinfo is None:
        before = before.replace(tzinfo=UTC)
    scope = caller.scope(user_id, agent_id)
    return DeadLettersPurged(
        deleted=ingest.dead_letters.purge(
            caller.tenant_id, task_id=task_id, memory_id=memory_id, before=before, scope=scope
        )
    )
