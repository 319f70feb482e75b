"""Bulk request builders and per-item outcomes (pure: no I/O).

A memory is one ``index`` action: deterministic ``_id`` (tenant + memory id), routed by tenant,
its source holding both the text and the vector. Request bodies are chunked by document count and
by bytes. Whether a failed item is retriable is ``retry_policy``'s call: 429 or 5xx for it, or a
request that failed as a whole for a transient reason (connection error, timeout, 429/5xx).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from brain_search.ingest.retry_policy import classify, error_fields, is_transient_status

_JSON_OPTS = orjson.OPT_SERIALIZE_NUMPY  # float32 vectors encode directly, at their own precision


@dataclass(frozen=True)
class BulkEntry:
    """One action + source pair, encoded as two NDJSON lines."""

    memory_id: str
    data: bytes


@dataclass(frozen=True)
class ItemOutcome:
    memory_id: str
    ok: bool
    retriable: bool = False
    status: int | None = None
    error_type: str | None = None
    reason: str | None = None
    superseded: bool = False  # a newer version (or a delete) of it is stored: nothing to do


VERSION_CONFLICT = "version_conflict_engine_exception"


def index_action(doc_id: str, routing: str, version: int | None = None) -> dict[str, Any]:
    """``version``: external versioning (``external_gte``, so the same job written again is a
    no-op rather than a conflict); a stored higher version makes the item a 409 (superseded).

    No ``_index``: the index is in the request's path (``POST /<index>/_bulk``). The engine refuses
    an index named in a body (``rest.action.multi.allow_explicit_index: false``), so the path rules
    of the engine gateway (``gateway/rules.py``) are the whole truth of what a role reaches."""
    action: dict[str, Any] = {"_id": doc_id, "routing": routing}
    if version is not None:
        action.update(version=version, version_type="external_gte")
    return {"index": action}


def encode_entry(memory_id: str, action: dict[str, Any], source: dict[str, Any]) -> BulkEntry:
    return BulkEntry(memory_id, orjson.dumps(action) + b"\n" + orjson.dumps(source, option=_JSON_OPTS) + b"\n")


def bulk_body(entries: Sequence[BulkEntry]) -> bytes:
    return b"".join(e.data for e in entries)


def chunk_entries(entries: Iterable[BulkEntry], max_docs: int, max_bytes: int) -> Iterator[list[BulkEntry]]:
    """Consecutive chunks of at most ``max_docs`` entries and ``max_bytes`` bytes (an entry larger
    than ``max_bytes`` on its own travels alone)."""
    chunk: list[BulkEntry] = []
    size = 0
    for e in entries:
        if chunk and (len(chunk) >= max_docs or size + len(e.data) > max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append(e)
        size += len(e.data)
    if chunk:
        yield chunk


def parse_bulk_response(response: dict[str, Any], entries: Sequence[BulkEntry]) -> list[ItemOutcome]:
    """One outcome per entry, in order."""
    items = response.get("items") or []
    if len(items) != len(entries):
        raise ValueError(f"the bulk response has {len(items)} items for {len(entries)} actions")
    out = []
    for entry, item in zip(entries, items, strict=True):
        result = next(iter(item.values()))
        status = int(result.get("status", 0))
        if 200 <= status < 300:
            out.append(ItemOutcome(entry.memory_id, ok=True, status=status))
            continue
        error_type, reason = error_fields(result.get("error"))
        if status == 409 and error_type == VERSION_CONFLICT:
            out.append(ItemOutcome(entry.memory_id, False, False, status, error_type, reason, superseded=True))
            continue
        out.append(ItemOutcome(entry.memory_id, False, is_transient_status(status), status, error_type, reason))
    return out


def outcomes_for_exception(entries: Sequence[BulkEntry], exc: Exception) -> list[ItemOutcome]:
    """Every entry of a request that failed as a whole shares its fate."""
    v = classify(exc)
    return [ItemOutcome(e.memory_id, False, v.retriable, v.status, v.error_type, v.reason) for e in entries]
