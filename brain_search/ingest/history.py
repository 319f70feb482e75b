"""Earlier versions of a memory: what a PUT or PATCH replaced, kept until purged (or until the
memory is deleted). One small document per replaced version, without the vector."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.exceptions import TransportError

from brain_search.config import Settings
from brain_search.errors import StoreUnavailable
from brain_search.ingest.models import MemoryOut, MemoryVersion
from brain_search.store.indices import IndexNames
from brain_search.store.scope import TENANT_FIELD, UserScope, owned, tenant_term


def history_id(tenant_id: str, memory_id: str, version: int) -> str:
    return hashlib.sha256(f"{tenant_id}\x1f{memory_id}\x1f{version}".encode()).hexdigest()[:40]


class HistoryStore:
    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        self.index = IndexNames.of(settings).memory_history

    def keep(self, tenant_id: str, old: MemoryOut, replaced_by: str) -> None:
        """Store ``old`` (with its version) as replaced; raises when it did not land (the update
        then does not happen)."""
        doc: dict[str, Any] = {
            TENANT_FIELD: tenant_id,
            "memory_id": old.memory_id,
            # its owner beside the copy: a user's reads and the forgetting of a user find it
            **{k: v for k, v in (("user_id", old.user_id), ("agent_id", old.agent_id)) if v is not None},
            "version": old.version,
            "replaced_by": replaced_by,
            "replaced_at": datetime.now(UTC).isoformat(),
            "memory": old.model_dump(mode="json"),
        }
        try:
            self.client.index(
                index=self.index,
                id=history_id(tenant_id, old.memory_id, old.version or 0),
                body=doc,
                params={"refresh": "wait_for"},
            )
        except (TransportError, OSError) as exc:
            raise StoreUnavailable(f"the earlier version of {old.memory_id!r} was not kept: {exc}") from exc

    def keep_imported(self, tenant_id: str, versions: dict[str, list[MemoryVersion]]) -> int:
        """Store earlier versions that a write carries (``brain-search import`` of an export), each
        under its memory id and version as it was exported; returns how many. Raises when one did
        not land (the write is then refused, not half-kept)."""
        lines: list[str] = []
        for memory_id, kept in versions.items():
            for v in kept:
                memory = v.memory.model_copy(update={"memory_id": memory_id, "version": v.version})
                owner = (("user_id", memory.user_id), ("agent_id", memory.agent_id))
                doc = {
                    TENANT_FIELD: tenant_id,
                    "memory_id": memory_id,
                    **{k: o for k, o in owner if o is not None},
                    "version": v.version,
                    "replaced_by": v.replaced_by,
                    "replaced_at": v.replaced_at.isoformat(),
                    "memory": memory.model_dump(mode="json"),
                }
                lines += [
                    json.dumps({"index": {"_id": history_id(tenant_id, memory_id, v.version or 0)}}),
                    json.dumps(doc),
                ]
        if not lines:
            return 0
        try:
            r = self.client.bulk(index=self.index, body="\n".join(lines) + "\n", params={"refresh": "wait_for"})
        except (TransportError, OSError) as exc:
            raise StoreUnavailable(f"the earlier versions were not kept: {exc}") from exc
        if r.get("errors"):
            failed = next(i["index"] for i in r["items"] if int(i["index"].get("status", 500)) >= 300)
            raise StoreUnavailable(f"the earlier versions were not kept: {failed.get('error')}")
        return len(lines) // 2

    def of_many(
        self, tenant_id: str, memory_ids: list[str], per_memory: int = 100, scope: UserScope | None = None
    ) -> dict[str, list[MemoryVersion]]:
        """memory id → its earlier versions that ``scope`` holds, newest first, for a page of
        memories (one search)."""
        if not memory_ids:
            return {}
        body = {
            "query": {"bool": {"filter": [*owned(tenant_id, scope), {"terms": {"memory_id": memory_ids}}]}},
            "sort": [{"memory_id": "asc"}, {"version": "desc"}],
            "size": min(10_000, per_memory * len(memory_ids)),
        }
        out: dict[str, list[MemoryVersion]] = {}
        for h in self.client.search(index=self.index, body=body)["hits"]["hits"]:
            kept = out.setdefault(h["_source"]["memory_id"], [])
            if len(kept) < per_memory:
                kept.append(_version(h["_source"]))
        return out

    def list(
        self, tenant_id: str, memory_id: str, limit: int = 100, scope: UserScope | None = None
    ) -> list[MemoryVersion]:
        """Newest first; only the versions ``scope`` holds."""
        body = {
            "query": {"bool": {"filter": [*owned(tenant_id, scope), {"term": {"memory_id": memory_id}}]}},
            "sort": [{"version": "desc"}],
            "size": limit,
        }
        hits = self.client.search(index=self.index, body=body)["hits"]["hits"]
        return [_version(h["_source"]) for h in hits]

    def purge(self, tenant_id: str, memory_id: str) -> int:
        body = {"query": {"bool": {"filter": [tenant_term(tenant_id), {"term": {"memory_id": memory_id}}]}}}
        r = self.client.delete_by_query(index=self.index, body=body, params={"refresh": "true", "conflicts": "proceed"})
        return int(r.get("deleted", 0))


def _version(src: dict[str, Any]) -> MemoryVersion:
    return MemoryVersion(
        version=src["version"],
        replaced_by=src["replaced_by"],
        replaced_at=src["replaced_at"],
        memory=MemoryOut(**src["memory"]),
    )
