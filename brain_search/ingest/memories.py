"""Reading and deleting one memory of a tenant (routed by tenant, through the alias)."""

from __future__ import annotations

from opensearchpy import NotFoundError, OpenSearch

from brain_search.config import Settings
from brain_search.errors import NotFound
from brain_search.ingest.models import MemoryOut
from brain_search.store.documents import memory_doc_id


class MemoryStore:
    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        self.alias = settings.memories_alias

    def get(self, tenant_id: str, memory_id: str) -> MemoryOut:
        try:
            r = self.client.get(
                index=self.alias,
                id=memory_doc_id(tenant_id, memory_id),
                params={"routing": tenant_id, "_source_excludes": "embedding"},
            )
        except NotFoundError:
            raise NotFound("memory", memory_id) from None
        src = r["_source"]
        if src.get("tenant_id") != tenant_id:  # the id embeds the tenant; this is belt and braces
            raise NotFound("memory", memory_id)
        return MemoryOut(**{k: v for k, v in src.items() if k in MemoryOut.model_fields})

    def delete(self, tenant_id: str, memory_id: str, refresh: bool = True) -> None:
        params = {"routing": tenant_id, **({"refresh": "wait_for"} if refresh else {})}
        try:
            self.client.delete(index=self.alias, id=memory_doc_id(tenant_id, memory_id), params=params)
        except NotFoundError:
            raise NotFound("memory", memory_id) from None
