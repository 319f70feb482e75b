"""Changing a stored memory: what PUT and PATCH turn the stored document into (no I/O but the
node lookup; ``IngestService.replace`` / ``edit`` read, check ``If-Match``, keep the history and
write).

- PUT replaces: the memory becomes the request, a field it does not name is cleared; the text is
  re-embedded through a task.
- PATCH changes the fields it names and keeps every other. Without ``content`` the document is
  rewritten at once with its vector; with ``content`` the stored fields and the changes become a
  write that is re-embedded through a task, like a PUT that names everything it keeps.
"""

from __future__ import annotations

from typing import Any

from brain_search_client.models.memory import KEPT_FIELDS, OWNER_FIELDS
from pydantic import ValidationError

from brain_search.config import Settings
from brain_search.errors import InvalidInput, NotFound, PreconditionFailed
from brain_search.ingest.chunking import CHUNK_KEYS, id_problem
from brain_search.ingest.models import IngestRequest, MemoryIn, MemoryPatch, MemoryReplace
from brain_search.ingest.prepare import NodeLookup, check_limits, iso_utc


def check_if_match(header: str | None, version: int) -> None:
    """``If-Match: "<version>"`` (a list, weak tags and ``*`` accepted) must name ``version``."""
    if header is None:
        return
    tags = [t.strip().removeprefix("W/").strip('"') for t in header.split(",")]
    if "*" not in tags and str(version) not in tags:
        raise PreconditionFailed(header, version)


def body_field(exc: InvalidInput) -> InvalidInput:
    """``memories.0.content`` → ``content``: the field as a PUT or PATCH body names it."""
    return InvalidInput(exc.field.removeprefix("memories.0.").removeprefix("memories.0"), exc.reason)


def _chunk_keys(src: dict[str, Any]) -> dict[str, Any]:
    """A piece of a chunked memory stays one: its ``chunk_*`` metadata survives any change."""
    return {k: v for k, v in (src.get("metadata") or {}).items() if k in CHUNK_KEYS}


def _one_memory(memory_id: str, fields: dict[str, Any], refresh: bool, create_nodes: bool) -> IngestRequest:
    try:
        memory = MemoryIn(memory_id=memory_id, **fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "memory_id"
        raise InvalidInput(field, str(err["msg"])) from None
    return IngestRequest(memories=[memory], refresh=refresh, create_nodes=create_nodes)


def replacement(memory_id: str, body: MemoryReplace, src: dict[str, Any]) -> IngestRequest:
    """PUT: the request is the whole new memory (a piece of a chunked memory stays that piece, and
    the memory stays its owner's: ``user_id`` and ``agent_id`` are kept)."""
    fields = body.model_dump(exclude={"refresh", "create_nodes"})
    fields |= {k: src.get(k) for k in OWNER_FIELDS}
    fields["metadata"] = {**(fields.get("metadata") or {}), **_chunk_keys(src)} or None
    return _one_memory(memory_id, fields, body.refresh, body.create_nodes)


def text_edit(memory_id: str, src: dict[str, Any], body: MemoryPatch) -> IngestRequest:
    """PATCH with ``content``: the stored fields, with the ones the body names changed."""
    changes = body.model_dump(exclude_unset=True, exclude={"refresh", "create_nodes"})
    fields = {k: src.get(k) for k in KEPT_FIELDS} | changes
    fields["metadata"] = {**(fields.get("metadata") or {}), **_chunk_keys(src)} or None
    return _one_memory(memory_id, fields, body.refresh, body.create_nodes)


def patched_source(
    tenant_id: str, src: dict[str, Any], body: MemoryPatch, settings: Settings, *, nodes: NodeLookup
) -> dict[str, Any]:
    """PATCH without ``content``: the stored document (vector included) with the named fields
    changed; a field sent as null is removed."""
    changes: dict[str, Any] = body.model_dump(exclude_unset=True, exclude={"create_nodes", "refresh"})
    if "metadata" in changes:
        probe = IngestRequest(memories=[MemoryIn(content=src["content"], metadata=changes["metadata"])])
        try:
            check_limits(probe, settings)
        except InvalidInput as exc:
            raise body_field(exc) from None
        changes["metadata"] = {**(changes["metadata"] or {}), **_chunk_keys(src)} or None
        if problem := id_problem(src.get("memory_id"), changes["metadata"], False):
            raise InvalidInput(problem[0], problem[1])
    new = dict(src)
    if "node_id" in changes:
        ref = changes.pop("node_id")
        if ref is None:
            new.pop("node_id", None)
            new.pop("node_path", None)
        else:
            try:
                node = nodes.get(tenant_id, ref)
            except NotFound:
                if not body.create_nodes:
                    raise InvalidInput("node_id", f"unknown node {ref!r} (or send `create_nodes: true`)") from None
                node = nodes.ensure(tenant_id, ref)
            new["node_id"], new["node_path"] = node.id, node.label
    for key in ("timestamp", "valid_until"):
        if changes.get(key) is not None:
            changes[key] = iso_utc(changes[key])
    for key, value in changes.items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    return new
