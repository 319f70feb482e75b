"""Test helper: memories written straight into the memories index (no ingestion pipeline), with
real embeddings, routed by tenant as the service writes them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from opensearchpy import OpenSearch
from opensearchpy.helpers import bulk

from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.store.documents import build_memory_doc, memory_doc_id


@dataclass(frozen=True)
class Mem:
    tenant_id: str
    memory_id: str
    content: str
    node_path: str | None = None
    node_id: str | None = None
    timestamp: datetime | None = None
    source: str = "conversation"
    conversation_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None


def seed_memories(client: OpenSearch, settings: Settings, embedder: Embedder, mems: Sequence[Mem]) -> None:
    vectors = embedder.encode([m.content for m in mems])
    actions = [
        {
            "_id": memory_doc_id(m.tenant_id, m.memory_id),
            "_routing": m.tenant_id,
            **build_memory_doc(
                tenant_id=m.tenant_id,
                memory_id=m.memory_id,
                content=m.content,
                embedding=vec,
                embedding_model=embedder.name,
                node_id=m.node_id,
                node_path=m.node_path,
                timestamp=m.timestamp,
                source=m.source,
                conversation_id=m.conversation_id,
                user_id=m.user_id,
                agent_id=m.agent_id,
            ),
        }
        for m, vec in zip(mems, vectors, strict=True)
    ]
    _, errors = bulk(client, actions, index=settings.memories_alias, refresh="wait_for", raise_on_error=False)
    assert not errors, errors


def node_paths(client: OpenSearch, settings: Settings, tenant_id: str) -> dict[str, str]:
    """memory_id → node_path of the tenant's memories."""
    r = client.search(
        index=settings.memories_alias,
        body={"query": {"term": {"tenant_id": tenant_id}}, "size": 1000, "_source": ["memory_id", "node_path"]},
        params={"routing": tenant_id},
    )
    return {h["_source"]["memory_id"]: h["_source"].get("node_path") for h in r["hits"]["hits"]}
