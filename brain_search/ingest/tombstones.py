"""Tombstones: what a delete leaves at a memory's ``_id`` so that no write accepted before the
delete can bring the memory back.

A tombstone is a small document at the deleted memory's ``_id`` (same routing), written with the
delete's version (``ingest/versions.py``, external versioning): a queued, retried or redelivered
write with an older version then gets a 409 from OpenSearch and is counted as *superseded*. It
holds no ``tenant_id`` (the tenant is in ``tombstone_of``), so every tenant-filtered search, count
and listing leaves it out by construction, and no vector, so kNN never sees it. Tombstones are
purged after ``tombstone_ttl_s``, which must outlast the longest a write can wait (task retries,
a queue backlog).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from opensearchpy import OpenSearch

from brain_search.ingest.bulk import BulkEntry, ItemOutcome, bulk_body, encode_entry, index_action, parse_bulk_response
from brain_search.store.documents import TOMBSTONE_FIELD, memory_doc_id


def tombstone_doc(tenant_id: str, memory_id: str, deleted_at: datetime) -> dict[str, Any]:
    return {"memory_id": memory_id, TOMBSTONE_FIELD: tenant_id, "deleted_at": deleted_at.isoformat()}


def is_tombstone(source: dict[str, Any]) -> bool:
    return TOMBSTONE_FIELD in source


def tombstone_entries(
    tenant_id: str, memory_ids: Iterable[str], version: int, deleted_at: datetime | None = None
) -> list[BulkEntry]:
    now = deleted_at or datetime.now(UTC)
    return [
        encode_entry(m, index_action(memory_doc_id(tenant_id, m), tenant_id, version), tombstone_doc(tenant_id, m, now))
        for m in memory_ids
    ]


def write_versioned(
    client: OpenSearch, index: str, entries: Sequence[BulkEntry], refresh: bool = True
) -> list[ItemOutcome]:
    """Versioned bulk writes (tombstones): one outcome per entry;
    ``superseded`` when a newer write of that memory is already stored."""
    if not entries:
        return []
    params = {"refresh": "wait_for"} if refresh else {}
    return parse_bulk_response(client.bulk(body=bulk_body(entries), index=index, params=params), entries)


def tombstoned(client: OpenSearch, alias: str, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, int]:
    """memory id → the version of its tombstone, for those of ``memory_ids`` that are deleted
    (real-time ``mget``: sees a delete the moment it returned)."""
    if not memory_ids:
        return {}
    docs = [{"_id": memory_doc_id(tenant_id, m), "routing": tenant_id} for m in memory_ids]
    r = client.mget(index=alias, body={"docs": docs}, params={"_source": f"{TOMBSTONE_FIELD},memory_id"})
    out = {}
    for d in r["docs"]:
        src = d.get("_source") or {}
        if d.get("found") and src.get(TOMBSTONE_FIELD) == tenant_id:
            out[src["memory_id"]] = int(d["_version"])
    return out


def stored_versions(
    client: OpenSearch, alias: str, tenant_id: str, memory_ids: Sequence[str]
) -> dict[str, tuple[bool, int]]:
    """memory id → (live, version) for those of ``memory_ids`` that have a document: a memory
    (live) or a tombstone. The same real-time ``mget`` as ``tombstoned`` (the worker role may ask
    for nothing else)."""
    if not memory_ids:
        return {}
    docs = [{"_id": memory_doc_id(tenant_id, m), "routing": tenant_id} for m in memory_ids]
    r = client.mget(index=alias, body={"docs": docs}, params={"_source": f"{TOMBSTONE_FIELD},memory_id"})
    out = {}
    for m, d in zip(memory_ids, r["docs"], strict=True):
        if d.get("found"):
            out[m] = (TOMBSTONE_FIELD not in (d.get("_source") or {}), int(d["_version"]))
    return out


def purge_query(ttl_s: float, now: datetime | None = None) -> dict[str, Any]:
    """Tombstones older than ``ttl_s`` (pure)."""
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=ttl_s)
    return {
        "query": {
            "bool": {
                "filter": [
                    {"exists": {"field": TOMBSTONE_FIELD}},
                    {"range": {"deleted_at": {"lt": cutoff.isoformat()}}},
                ]
            }
        }
    }
