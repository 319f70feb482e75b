"""Changing a memory (``ingest/edits.py``): PUT replaces it (re-embedded, through a task; a field
it does not name is cleared), PATCH changes the fields it names and keeps every other (a new text
is re-embedded through a task: 202; other fields change at once: 200). The versions they replace
are kept in its history. ``If-Match`` with a version that is no longer the stored one is a 412."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Response, status

from brain_search.api.deps import CallerDep, StateDep, TenantDep, WriterDep
from brain_search.api.routes.memories import AgentQuery, IngestDep, SharedQuery, UserQuery
from brain_search.ingest.forget import ForgetRequest, ForgetStatus
from brain_search.ingest.models import (
    HistoryPurged,
    MemoryHistory,
    MemoryOut,
    MemoryPatch,
    MemoryReplace,
    ReplaceAccepted,
)

router = APIRouter(prefix="/v1", tags=["memories"])


@router.get("/memories/{memory_id:path}/history")
def get_history(
    memory_id: str,
    caller: CallerDep,
    ingest: IngestDep,
    user_id: UserQuery = None,
    *,
    agent_id: AgentQuery = None,
    include_shared: SharedQuery = False,
) -> MemoryHistory:
    """The versions PUT and PATCH replaced, newest first (404 when the memory has none and is not
    stored, and for another user's memory)."""
    tenant, scope = caller.tenant_id, caller.scope(user_id, agent_id, include_shared)
    if not scope.everyone:
        ingest.memories.get(tenant, memory_id, scope)  # NotFound for another user's memory
    versions = ingest.history.list(tenant, memory_id, scope=scope)
    if not versions:
        ingest.memories.get(tenant, memory_id, scope)  # NotFound when it is not stored either
    return MemoryHistory(memory_id=memory_id, versions=versions)


@router.delete("/memories/{memory_id:path}/history")
def purge_history(
    memory_id: str, caller: WriterDep, ingest: IngestDep, user_id: UserQuery = None, *, agent_id: AgentQuery = None
) -> HistoryPurged:
    """Delete the versions PUT and PATCH replaced (the memory itself stays)."""
    scope = caller.scope(user_id, agent_id)
    if not scope.everyone:
        ingest.memories.get(caller.tenant_id, memory_id, scope)  # NotFound for another user's memory
    return HistoryPurged(deleted=ingest.history.purge(caller.tenant_id, memory_id))


@router.put("/memories/{memory_id:path}", status_code=status.HTTP_202_ACCEPTED)
def put_memory(
    memory_id: str,
    body: MemoryReplace,
    caller: WriterDep,
    state: StateDep,
    *,
    ingest: IngestDep,
    if_match: Annotated[str | None, Header()] = None,
    user_id: UserQuery = None,
    agent_id: AgentQuery = None,
) -> ReplaceAccepted:
    """Replace a stored memory (404 if there is none, or it is another user's) by the body: a
    field it does not name is cleared (to keep them: PATCH), its owner (``user_id``, ``agent_id``)
    is kept. Re-embedded through a task like a POST; the version it replaces goes to its history."""
    scope = caller.scope(user_id, agent_id)
    return ingest.replace(
        caller.tenant_id, memory_id, body, state.settings, nodes=state.graph, if_match=if_match, scope=scope
    )


@router.patch(
    "/memories/{memory_id:path}",
    responses={202: {"model": ReplaceAccepted, "description": "a new `content`: re-embedded through a task"}},
)
def patch_memory(
    memory_id: str,
    body: MemoryPatch,
    response: Response,
    caller: WriterDep,
    *,
    state: StateDep,
    ingest: IngestDep,
    if_match: Annotated[str | None, Header()] = None,
    user_id: UserQuery = None,
    agent_id: AgentQuery = None,
) -> MemoryOut | ReplaceAccepted:
    """Change the fields the body names and keep every other. With ``content``: re-embedded through
    a task, 202 with the task and the new version (``refresh`` as on POST). Without: changed at
    once, keeping the vector, 200 with the memory (its new version also the ``ETag``). The owner
    (``user_id``, ``agent_id``) is kept: a PATCH naming it is a 422; another user's memory a 404."""
    scope = caller.scope(user_id, agent_id)
    changed = ingest.edit(
        caller.tenant_id, memory_id, body, state.settings, nodes=state.graph, if_match=if_match, scope=scope
    )
    if isinstance(changed, ReplaceAccepted):
        response.status_code = status.HTTP_202_ACCEPTED
    else:
        response.headers["ETag"] = f'"{changed.version}"'
    return changed


@router.post("/forget", status_code=status.HTTP_202_ACCEPTED)
def forget(body: ForgetRequest, caller: WriterDep, state: StateDep, ingest: IngestDep) -> ForgetStatus:
    """Delete every memory of the caller's tenant (``user_id`` / ``agent_id``: of that user or
    agent; a user's key: of its user) that matches the filters (conversation, node subtree,
    source, time range; all of them with ``all: true``), with their pieces, history and dead
    letters, as a task: follow it at ``GET /v1/forget/{task_id}``."""
    return ingest.forget(caller.tenant_id, caller.forget(body), state.graph)


@router.get("/forget/{task_id}")
def forget_status(task_id: str, tenant: TenantDep, ingest: IngestDep) -> ForgetStatus:
    return ingest.forgetter.status(tenant, task_id)
