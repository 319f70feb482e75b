"""What one memory looks like in OpenSearch: deterministic ids and the document body.

A memory is ONE document holding both its text (BM25) and its vector (kNN), so it is
searchable by both or by neither.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

ID_SEPARATOR = "\x1f"

VIEW_FIELD = "view"
"""What a recall shows of a memory, as one stored JSON string (``with_view``): a recall reads
it instead of ``_source``, whose 384-float vector the engine would otherwise parse for every hit"""
VIEW_MARK = "view_v"
"""the view's format (1): a memory without it was stored before views (``store.views`` fills them)"""
VIEW_VERSION = 1
VIEW_KEYS = ("memory_id", "content", "node_id", "timestamp", "source", "conversation_id", "metadata", "valid_until")
"""the fields of the view: recall's fields but ``node_path``, which a graph move rewrites in place
(recall reads it from its doc values)"""


def derive_memory_id(content: str, node_id: str | None, timestamp: str | None) -> str:
    """A memory id for clients that do not give one: stable over content + node + timestamp."""
    h = hashlib.sha256(ID_SEPARATOR.join([content, node_id or "", timestamp or ""]).encode()).hexdigest()
    return f"m_{h[:24]}"


def memory_doc_id(tenant_id: str, memory_id: str) -> str:
    """The OpenSearch ``_id``: deterministic in (tenant, memory id), so a redelivered write
    overwrites instead of duplicating, and two tenants never collide."""
    return hashlib.sha256(f"{tenant_id}{ID_SEPARATOR}{memory_id}".encode()).hexdigest()[:40]


def view_of(doc: Mapping[str, Any]) -> str:
    """The stored view of a memory document: its ``VIEW_KEYS`` that are set, as JSON (pure)."""
    return orjson.dumps({k: doc[k] for k in VIEW_KEYS if doc.get(k) is not None}).decode()


def with_view(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` with its view made from its own fields (every write of a memory document goes
    through here: ``build_memory_doc``, and the rewrite of a PATCH)."""
    return {**doc, VIEW_FIELD: view_of(doc), VIEW_MARK: VIEW_VERSION}


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:32]


def build_memory_doc(
    *,
    tenant_id: str,
    memory_id: str,
    content: str,
    embedding: Sequence[float],
    embedding_model: str,
    node_id: str | None = None,
    node_path: str | None = None,
    timestamp: datetime | str | None = None,
    source: str | None = None,
    conversation_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    ingested_at: datetime | None = None,
    supersedes: Sequence[str] | None = None,
    valid_until: str | None = None,
) -> dict[str, Any]:
    ts = timestamp.isoformat() if isinstance(timestamp, datetime) else timestamp
    doc: dict[str, Any] = {
        "tenant_id": tenant_id,
        "memory_id": memory_id,
        "content": content,
        "content_hash": content_hash(content),
        "embedding": [float(x) for x in embedding],
        "embedding_model": embedding_model,
        "ingested_at": (ingested_at or datetime.now(UTC)).isoformat(),
    }
    optional = {
        "node_id": node_id,
        "node_path": node_path or node_id,
        "timestamp": ts,
        "source": source,
        "conversation_id": conversation_id,
        "metadata": metadata or None,
        "supersedes": list(supersedes) if supersedes else None,
        "valid_until": valid_until,
    }
    doc.update({k: v for k, v in optional.items() if v is not None})
    return with_view(doc)
