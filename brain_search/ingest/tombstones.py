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

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from opensearchpy import OpenSearch

from brain_search.errors import StoreUnavailable
from brain_search.ingest.bulk import BulkEntry, ItemOutcome, bulk_body, encode_entry, index_action, parse_bulk_response
from brain_search.store.documents import memory_doc_id
from brain_search.store.scope import TOMBSTONE_FIELD, TenantScope


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


def tombstoned(client: OpenSearch, scope: TenantScope, memory_ids: Sequence[str]) -> dict[str, int]:
    """memory id → the version of its tombstone, for those of ``memory_ids`` that are deleted
    (real-time ``mget``: sees a delete the moment it returned)."""
    if not memory_ids:
        return {}
    docs = [{"_id": memory_doc_id(scope.tenant_id, m), "routing": scope.routing} for m in memory_ids]
    r = client.mget(index=scope.index, body={"docs": docs}, params={"_source": f"{TOMBSTONE_FIELD},memory_id"})
    out = {}
    for d in r["docs"]:
        src = d.get("_source") or {}
        if d.get("found") and src.get(TOMBSTONE_FIELD) == scope.tenant_id:
            out[src["memory_id"]] = int(d["_version"])
    return out


def stored_versions(client: OpenSearch, scope: TenantScope, memory_ids: Sequence[str]) -> dict[str, tuple[bool, int]]:
    """memory id → (live, version) for those of ``memory_ids`` that have a document: a memory
    (live) or a tombstone. The same real-time ``mget`` as ``tombstoned`` (the worker role may ask
    for nothing else)."""
    if not memory_ids:
        return {}
    docs = [{"_id": memory_doc_id(scope.tenant_id, m), "routing": scope.routing} for m in memory_ids]
    r = client.mget(index=scope.index, body={"docs": docs}, params={"_source": f"{TOMBSTONE_FIELD},memory_id"})
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


def delete_older_copies(
    client: OpenSearch, indices: Sequence[str], tenant_id: str, memory_ids: Sequence[str], *, version: int
) -> int:
    """Delete the copies of ``memory_ids`` in ``indices`` (indices that do not serve the tenant:
    ``Placement.stale_copies``) that are older than ``version``, the delete's or the forget's own
    (``version_type: external``): a document written after it, or its own tombstone in an index
    that serves the tenant by now, stays. Returns how many went; raises on any other failure."""
    if not memory_ids:
        return 0
    lines = [
        json.dumps(
            {
                "delete": {
                    "_id": memory_doc_id(tenant_id, m),
                    "routing": tenant_id,
                    "version": version,
                    "version_type": "external",
                }
            }
        )
        for m in memory_ids
    ]
    deleted = 0
    for index in indices:
        r = client.bulk(index=index, body="\n".join(lines) + "\n", params={"refresh": "true"})
        for item in r["items"]:
            status = int(item["delete"].get("status", 500))
            if status < 300:
                deleted += 1
            elif status not in (404, 409):  # none there, or one newer than the delete
                raise StoreUnavailable(f"a copy in {index} was not deleted: {item['delete'].get('error')}")
    return deleted


def forget_older_copies(
    client: OpenSearch, indices: Sequence[str], tenant_id: str, query: dict[str, Any], *, version: int, page: int = 500
) -> int:
    """A forget's matches in ``indices``, deleted where older than the forget (``delete_older_copies``)."""
    deleted = 0
    for index in indices:
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {"query": query, "size": page, "sort": [{"memory_id": "asc"}], "_source": False}
            if after:
                body["search_after"] = after
            hits = client.search(index=index, body=body, params={"routing": tenant_id})["hits"]["hits"]
            if not hits:
                break
            after = hits[-1]["sort"]
            deleted += delete_older_copies(client, [index], tenant_id, [h["sort"][0] for h in hits], version=version)
    return deleted
