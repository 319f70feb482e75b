"""Earlier versions of a memory: what a PUT or PATCH replaced, kept until purged (or until the
memory is deleted). One small document per replaced version, without the vector."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.exceptions import TransportError

from brain_search.config import Settings
from brain_search.errors import StoreUnavailable
from brain_search.ingest.models import MemoryOut, MemoryVersion
from brain_search.store.indices import IndexNames
from brain_search.store.scope import UserScope, owned


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
            "tenant_id": tenant_id,
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
        return [
            MemoryVersion(
                version=h["_source"]["version"],
                replaced_by=h["_source"]["replaced_by"],
                replaced_at=h["_source"]["replaced_at"],
                memory=MemoryOut(**h["_source"]["memory"]),
            )
            for h in hits
        ]

    def purge(self, tenant_id: str, memory_id: str) -> int:
        body = {"query": {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"term": {"memory_id": memory_id}}]}}}
        r = self.client.delete_by_query(index=self.index, body=body, params={"refresh": "true", "conflicts": "proceed"})
        return int(r.get("deleted", 0))
