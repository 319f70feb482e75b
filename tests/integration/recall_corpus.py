"""A small corpus indexed for real, shared by the recall tests."""

from __future__ import annotations

from opensearchpy import OpenSearch

from brain_search.api.state import AppState
from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.encoders.factory import make_worker_embedder
from brain_search.store.documents import build_memory_doc, memory_doc_id

CORPUS = [
    (
        "eq",
        "aiConnected/Brain/Architecture",
        "The equity split is 53% for me, 10% each for Jacob and Maria.",
        "2026-01-15",
    ),
    (
        "cto",
        "aiConnected/Brain",
        "Jacob offered to join as CTO if we match his compensation at the bank.",
        "2026-01-12",
    ),
    ("salary", "aiConnected/Brain", "We talked about a salary band for the CTO role plus stock options.", "2026-01-10"),
    (
        "fair",
        "Reading/Startups",
        "Notes on fair partnership principles: trust, clear roles, vesting for everyone.",
        "2025-12-28",
    ),
    ("teams", "Reading/Startups", "General thoughts on building founding teams: hire for values first.", "2025-11-15"),
    ("web", "aiConnected/Web", "The landing page needs a darker hero section and a pricing table.", "2026-01-05"),
    ("groceries", "Personal", "Bought apples, oat milk and coffee beans at the market.", "2026-01-03"),
    ("run", "Personal/Health", "Ran 10 km in the park this morning, my knee felt fine.", "2026-01-04"),
    ("dog", "Personal", "The puppy chewed through another charging cable last night.", "2026-01-06"),
]


_document_embedders: dict[str, Embedder] = {}


def document_embedder(settings: Settings) -> Embedder:
    """The fp32 model the workers embed memories with (the API's own embedder is for queries:
    int8, whose vectors depend on what else is in the batch)."""
    key = f"{settings.models_dir}|{settings.embedding_batch_size}"
    if key not in _document_embedders:
        _document_embedders[key] = make_worker_embedder(settings)
    return _document_embedders[key]


def index_corpus(state: AppState, client: OpenSearch, tenant: str, corpus=CORPUS) -> None:  # type: ignore[no-untyped-def]
    vecs = document_embedder(state.settings).encode([c[2] for c in corpus])
    for (mid, node_label, text, day), vec in zip(corpus, vecs, strict=True):
        node = state.graph.ensure(tenant, node_label)
        doc = build_memory_doc(
            tenant_id=tenant,
            memory_id=mid,
            content=text,
            embedding=vec,
            embedding_model=state.embedder.name,
            node_id=node.id,
            node_path=node.label,
            timestamp=f"{day}T10:00:00Z",
            source="conversation",
            conversation_id=f"conv-{mid}",
        )
        client.index(index=state.settings.memories_alias, id=memory_doc_id(tenant, mid), body=doc, routing=tenant)
    client.indices.refresh(index=state.settings.memories_alias)
