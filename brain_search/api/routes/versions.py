"""Updating a memory: PUT replaces it (re-embedded, through a task), PATCH changes its fields
without re-embedding, and the versions they replace are kept in its history. ``If-Match`` with
a version that is no longer the stored one is a 412."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Response, status
from pydantic import ValidationError

from brain_search.api.deps import StateDep, TenantDep
from brain_search.api.routes.memories import IngestDep
from brain_search.errors import InvalidInput, NotFound, PreconditionFailed
from brain_search.ingest.forget import ForgetRequest, ForgetStatus
from brain_search.ingest.memories import memory_out
from brain_search.ingest.models import (
    IngestRequest,
    MemoryHistory,
    MemoryIn,
    MemoryOut,
    MemoryPatch,
    MemoryReplace,
    ReplaceAccepted,
)
from brain_search.ingest.prepare import check_limits, iso_utc, prepare_items
from brain_search.ingest.service import new_job

router = APIRouter(prefix="/v1", tags=["memories"])
CHUNK_KEYS = ("chunk_of", "chunk_index", "chunk_count")


def check_if_match(header: str | None, version: int) -> None:
    """``If-Match: "<version>"`` (a list, weak tags and ``*`` accepted) must name ``version``."""
    if header is None:
        return
    tags = [t.strip().removeprefix("W/").strip('"') for t in header.split(",")]
    if "*" not in tags and str(version) not in tags:
        raise PreconditionFailed(header, version)


def _field(exc: InvalidInput) -> InvalidInput:
    """``memories.0.content`` → ``content``: the field as this route's body names it."""
    return InvalidInput(exc.field.removeprefix("memories.0.").removeprefix("memories.0"), exc.reason)


@router.get("/memories/{memory_id:path}/history")
def get_history(memory_id: str, tenant: TenantDep, ingest: IngestDep) -> MemoryHistory:
    """The versions PUT and PATCH replaced, newest first (404 when the memory has none and is not stored)."""
    versions = ingest.history.list(tenant, memory_id)
    if not versions:
        ingest.memories.get(tenant, memory_id)  # NotFound when it is not stored either
    return MemoryHistory(memory_id=memory_id, versions=versions)


@router.delete("/memories/{memory_id:path}/history")
def purge_history(memory_id: str, tenant: TenantDep, ingest: IngestDep) -> dict[str, int]:
    return {"deleted": ingest.history.purge(tenant, memory_id)}


@router.put("/memories/{memory_id:path}", status_code=status.HTTP_202_ACCEPTED)
def put_memory(
    memory_id: str,
    body: MemoryReplace,
    tenant: TenantDep,
    state: StateDep,
    ingest: IngestDep,
    if_match: Annotated[str | None, Header()] = None,
) -> ReplaceAccepted:
    """Replace a stored memory (404 if there is none): re-embedded through a task like a POST; the
    version it replaces goes to its history."""
    old, version = ingest.memories.stored(tenant, memory_id, with_vector=False)
    check_if_match(if_match, version)
    fields = body.model_dump(exclude={"refresh", "create_nodes"})
    try:
        memory = MemoryIn(memory_id=memory_id, **fields)
    except ValidationError as exc:
        raise InvalidInput("memory_id", str(exc.errors()[0]["msg"])) from None
    req = IngestRequest(memories=[memory], refresh=body.refresh, create_nodes=body.create_nodes)
    try:
        items = prepare_items(req, tenant, state.settings, state.graph)
    except InvalidInput as exc:
        raise _field(exc) from None
    new_version = ingest.versions.next()
    ingest.history.keep(tenant, memory_out(old, version), "put")
    job = new_job(tenant, items, body.refresh, new_version)
    ingest.queue.submit(job)
    return ReplaceAccepted(task_id=job.task_id, submitted=1, memory_ids=[memory_id], version=new_version)


@router.patch("/memories/{memory_id:path}")
def patch_memory(
    memory_id: str,
    body: MemoryPatch,
    response: Response,
    tenant: TenantDep,
    state: StateDep,
    ingest: IngestDep,
    if_match: Annotated[str | None, Header()] = None,
) -> MemoryOut:
    """Change fields of a stored memory at once, keeping its vector (the text needs a PUT)."""
    src, version = ingest.memories.stored(tenant, memory_id)
    check_if_match(if_match, version)
    changes: dict[str, Any] = body.model_dump(exclude_unset=True, exclude={"create_nodes"})
    if not changes:
        raise InvalidInput("body", "nothing to change: send node_id, timestamp, source, conversation_id or metadata")
    if "metadata" in changes:
        probe = IngestRequest(memories=[MemoryIn(content=src["content"], metadata=changes["metadata"])])
        try:
            check_limits(probe, state.settings)
        except InvalidInput as exc:
            raise _field(exc) from None
        kept = {k: v for k, v in (src.get("metadata") or {}).items() if k in CHUNK_KEYS}
        changes["metadata"] = {**(changes["metadata"] or {}), **kept} or None
    new = dict(src)
    if "node_id" in changes:
        ref = changes.pop("node_id")
        if ref is None:
            new.pop("node_id", None)
            new.pop("node_path", None)
        else:
            try:
                node = state.graph.get(tenant, ref)
            except NotFound:
                if not body.create_nodes:
                    raise InvalidInput("node_id", f"unknown node {ref!r} (or send `create_nodes: true`)") from None
                node = state.graph.ensure(tenant, ref)
            new["node_id"], new["node_path"] = node.id, node.label
    if "timestamp" in changes:
        changes["timestamp"] = iso_utc(changes["timestamp"])
    for key, value in changes.items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    new_version = ingest.versions.next()
    old = {k: v for k, v in src.items() if k != "embedding"}
    ingest.history.keep(tenant, memory_out(old, version), "patch")
    ingest.memories.rewrite(tenant, memory_id, new, new_version)
    response.headers["ETag"] = f'"{new_version}"'
    return memory_out({k: v for k, v in new.items() if k != "embedding"}, new_version)


@router.post("/forget", status_code=status.HTTP_202_ACCEPTED)
def forget(body: ForgetRequest, tenant: TenantDep, state: StateDep, ingest: IngestDep) -> ForgetStatus:
    """Delete every memory of the caller's tenant that matches the filters (conversation, node
    subtree, source, time range; all of them with ``all: true``), with their pieces, history and
    dead letters, as a task: follow it at ``GET /v1/forget/{task_id}``."""
    return ingest.forget(tenant, body, state.graph)


@router.get("/forget/{task_id}")
def forget_status(task_id: str, tenant: TenantDep, ingest: IngestDep) -> ForgetStatus:
    return ingest.forgetter.status(tenant, task_id)
