"""A validated request → the items of an ingest job. Raises InvalidInput (field + reason) before
anything is queued: limits from the settings, unknown nodes, duplicate ids; chunks long content
when asked to."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Protocol

from brain_search_client.models.inputs import json_depth
from brain_search_client.models.memory import RESOLVED_FIELDS

from brain_search.config import Settings
from brain_search.errors import InvalidInput, NotFound
from brain_search.graph.store import Node
from brain_search.ingest.chunking import chunk_id, chunk_text, id_problem
from brain_search.ingest.models import IngestRequest, MemoryIn, MemoryItem
from brain_search.store.documents import derive_memory_id


class NodeLookup(Protocol):
    """What preparation needs of the graph (``GraphStore`` has it)."""

    def get(self, tenant_id: str, ref: str) -> Node: ...

    def ensure(self, tenant_id: str, label: str, description: str | None = None) -> Node: ...


def iso_utc(ts: datetime | None) -> str | None:
    if ts is None:
        return None
    return (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).isoformat()


def check_limits(req: IngestRequest, settings: Settings) -> None:
    """The checks that need no I/O; the first failure is raised."""
    if len(req.memories) > settings.ingest_max_batch:
        raise InvalidInput("memories", f"{len(req.memories)} memories: at most {settings.ingest_max_batch} a request")
    for i, m in enumerate(req.memories):
        field = f"memories.{i}"
        limit = settings.ingest_max_document_chars if req.chunk else settings.ingest_max_content_chars
        if len(m.content) > limit:
            hint = "" if req.chunk else " (store a long document in pieces: send `chunk: true`)"
            raise InvalidInput(f"{field}.content", f"{len(m.content)} characters: at most {limit}{hint}")
        if m.metadata is not None:
            depth = json_depth(m.metadata)
            if depth > settings.ingest_max_metadata_depth:
                raise InvalidInput(
                    f"{field}.metadata", f"nested {depth} levels deep: at most {settings.ingest_max_metadata_depth}"
                )
            size = len(json.dumps(m.metadata, ensure_ascii=False, default=str).encode())
            if size > settings.ingest_max_metadata_bytes:
                raise InvalidInput(
                    f"{field}.metadata", f"{size} bytes as JSON: at most {settings.ingest_max_metadata_bytes}"
                )


class _NodeResolver:
    """Resolves each distinct node reference once per request."""

    def __init__(self, nodes: NodeLookup, tenant_id: str, create: bool) -> None:
        self.nodes = nodes
        self.tenant_id = tenant_id
        self.create = create
        self._seen: dict[str, Node] = {}

    def __call__(self, ref: str, field: str) -> Node:
        if ref in self._seen:
            return self._seen[ref]
        try:
            node = self.nodes.get(self.tenant_id, ref)
        except NotFound:
            if not self.create:
                reason = f"unknown node {ref!r} (create it first, or send `create_nodes: true`)"
                raise InvalidInput(field, reason) from None
            try:
                node = self.nodes.ensure(self.tenant_id, ref)
            except InvalidInput as exc:
                raise InvalidInput(field, exc.reason) from None
        self._seen[ref] = node
        return node


def _expand(m: MemoryIn, node: Node | None, chunk: bool, settings: Settings) -> list[MemoryItem]:
    ts = iso_utc(m.timestamp)
    memory_id = m.memory_id or derive_memory_id(
        m.content, node.id if node else None, ts, m.user_id, agent_id=m.agent_id
    )
    given = m.model_dump(exclude=set(RESOLVED_FIELDS))
    base = MemoryItem(
        **given,
        memory_id=memory_id,
        node_id=node.id if node else None,
        node_path=node.label if node else None,
        timestamp=ts,
        supersedes=sorted(set(m.supersedes)) if m.supersedes else None,
        valid_until=iso_utc(m.valid_until),
    )
    if not chunk or len(m.content) <= settings.ingest_chunk_chars:
        return [base]
    pieces = chunk_text(m.content, settings.ingest_chunk_chars, settings.ingest_chunk_overlap_chars)
    return [
        base.model_copy(
            update={
                "memory_id": chunk_id(memory_id, n),
                "content": piece,
                "metadata": {**(m.metadata or {}), "chunk_of": memory_id, "chunk_index": n, "chunk_count": len(pieces)},
            }
        )
        for n, piece in enumerate(pieces)
    ]


def check_lifecycle(m: MemoryIn, field: str) -> None:
    """Fields that contradict each other: a memory superseding itself, a validity that ends
    before the memory's own time."""
    ts = m.timestamp if m.timestamp is None or m.timestamp.tzinfo else m.timestamp.replace(tzinfo=UTC)
    until = m.valid_until if m.valid_until is None or m.valid_until.tzinfo else m.valid_until.replace(tzinfo=UTC)
    if m.supersedes and m.memory_id and m.memory_id in m.supersedes:
        raise InvalidInput(f"{field}.supersedes", f"{m.memory_id!r} cannot supersede itself")
    if ts and until and until < ts:
        raise InvalidInput(f"{field}.valid_until", "is before the memory's timestamp")


def prepare_items(req: IngestRequest, tenant_id: str, settings: Settings, nodes: NodeLookup) -> list[MemoryItem]:
    """Validate a request for ``tenant_id`` and turn it into task items (chunked when asked)."""
    req = req.owned()
    check_limits(req, settings)
    resolve = _NodeResolver(nodes, tenant_id, req.create_nodes)
    items: list[MemoryItem] = []
    seen: dict[str, tuple[int, MemoryItem]] = {}
    for i, m in enumerate(req.memories):
        if problem := id_problem(m.memory_id, m.metadata, req.chunk):
            raise InvalidInput(f"memories.{i}.{problem[0]}", problem[1])
        node = resolve(m.node_id, f"memories.{i}.node_id") if m.node_id else None
        check_lifecycle(m, f"memories.{i}")
        for item in _expand(m, node, req.chunk, settings):
            if item.memory_id in seen:
                j, other = seen[item.memory_id]
                if other == item:
                    continue  # the very same memory twice: stored once
                raise InvalidInput(
                    f"memories.{i}.memory_id",
                    f"duplicate memory id {item.memory_id!r} in this request (also memories.{j})",
                )
            seen[item.memory_id] = (i, item)
            items.append(item)
        if len(items) > settings.ingest_max_memories_per_request:
            raise InvalidInput(
                "memories", f"more than {settings.ingest_max_memories_per_request} memories after chunking"
            )
    return items
