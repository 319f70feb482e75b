"""What one memory looks like in OpenSearch: deterministic ids and the document body.

A memory is ONE document holding both its text (BM25) and its vector (kNN), so it is
searchable by both or by neither.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from brain_search_client.models.memory import STORED_FIELDS, VIEW_FIELDS

from brain_search.store.scope import TENANT_FIELD

ID_SEPARATOR = "\x1f"

VIEW_FIELD = "view_dv"
"""What a recall shows of a memory, as JSON in a binary doc value (``with_view``, base64 on the
wire): a recall reads it with ``stored_fields: _none_``. A stored field (the first views, 1) still
made the engine decompress each hit's stored record, ``_source`` and its vector included: most of
the fetch phase (lab/reports/history/performance-2026-12.md, 2026-12-04, fourth session)"""
OLD_VIEW_FIELD = "view"
"""the stored-field view of format 1 (no longer written; ``with_view`` drops it)"""
VIEW_MARK = "view_v"
"""the view's format (2): a memory without it, or with 1, gets its view at install (``store.views``)"""
VIEW_VERSION = 2
OPTIONAL_FIELDS = frozenset(STORED_FIELDS) - {
    TENANT_FIELD,
    "memory_id",
    "content",
    "content_hash",
    "embedding",
    "embedding_model",
    "ingested_at",
}
"""the fields ``build_memory_doc`` writes when given (the rest it always writes)"""
VIEW_KEYS = VIEW_FIELDS
"""the fields of the view (``models/memory.py``)"""


def derive_memory_id(
    content: str, node_id: str | None, timestamp: str | None, user_id: str | None = None, *, agent_id: str | None = None
) -> str:
    """A memory id for clients that do not give one: stable over content + node + timestamp, and
    its owner's user and agent when it has one (two users who write the same words get two
    memories; a memory without an owner keeps the id it always had)."""
    parts = [content, node_id or "", timestamp or ""]
    if user_id is not None or agent_id is not None:
        parts += [f"user:{user_id or ''}", f"agent:{agent_id or ''}"]
    h = hashlib.sha256(ID_SEPARATOR.join(parts).encode()).hexdigest()
    return f"m_{h[:24]}"


def memory_doc_id(tenant_id: str, memory_id: str) -> str:
    """The OpenSearch ``_id``: deterministic in (tenant, memory id), so a redelivered write
    overwrites instead of duplicating, and two tenants never collide."""
    return hashlib.sha256(f"{tenant_id}{ID_SEPARATOR}{memory_id}".encode()).hexdigest()[:40]


def view_of(doc: Mapping[str, Any]) -> str:
    """The view of a memory document: its ``VIEW_KEYS`` that are set, as JSON, base64-encoded for
    the binary field (pure)."""
    return base64.b64encode(orjson.dumps({k: doc[k] for k in VIEW_KEYS if doc.get(k) is not None})).decode()


def read_view(value: str) -> dict[str, Any]:
    """``view_of``'s inverse: the fields a view holds (pure). The engine returns a binary doc
    value as base64 without its padding; ``_source`` holds it as written (padded)."""
    out: dict[str, Any] = orjson.loads(binascii.a2b_base64(value + "=" * (-len(value) % 4)))
    return out


def with_view(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` with its view made from its own fields (every write of a memory document goes
    through here: ``build_memory_doc``, and the rewrite of a PATCH)."""
    fields = {k: v for k, v in doc.items() if k != OLD_VIEW_FIELD}
    return {**fields, VIEW_FIELD: view_of(doc), VIEW_MARK: VIEW_VERSION}


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:32]


def build_memory_doc(
    *,
    tenant_id: str,
    memory_id: str,
    content: str,
    embedding: Sequence[float],
    embedding_model: str,
    ingested_at: datetime | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A memory's document: the service's own fields, then each of the memory's ``fields``
    (``models/memory.py``) that is set, with its view. A time may be given as a datetime; a
    field the schema does not hold is a TypeError (pure)."""
    unknown = set(fields) - OPTIONAL_FIELDS
    if unknown:
        raise TypeError(f"build_memory_doc: not a memory field: {', '.join(sorted(unknown))}")
    doc: dict[str, Any] = {
        TENANT_FIELD: tenant_id,
        "memory_id": memory_id,
        "content": content,
        "content_hash": content_hash(content),
        "embedding": [float(x) for x in embedding],
        "embedding_model": embedding_model,
        "ingested_at": (ingested_at or datetime.now(UTC)).isoformat(),
    }
    for name, value in fields.items():
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, list | tuple):
            value = list(value)
        if value is not None and value != [] and value != {}:
            doc[name] = value
    if doc.get("node_id") and not doc.get("node_path"):
        doc["node_path"] = doc["node_id"]
    return with_view(doc)
