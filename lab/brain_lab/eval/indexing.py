"""Bulk-load an evaluation dataset into its own index prefix (never the developer's data).

Each dataset gets ``<prefix>-<dataset>`` as index prefix (e.g. ``bt-evalrun-locomo``), so BM25
statistics of one corpus never leak into another. A fingerprint of the loaded documents is kept in
the index mapping's ``_meta``: a re-run with the same data and model reuses the index.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.helpers import bulk, streaming_bulk

from brain_lab.eval.datasets import Dataset, Memory
from brain_search.config import Settings
from brain_search.encoders.base import BGE_SMALL, E5_SMALL, E5_SMALL_V2, encoder_info, index_meta
from brain_search.encoders.embedding import Embedder
from brain_search.encoders.factory import make_document_embedder
from brain_search.index_names import IndexNames
from brain_search.store.documents import build_memory_doc, content_hash, memory_doc_id
from brain_search.store.templates import install_memories_index, load_template

BULK_CHUNK = 500
ENCODER_SUFFIX = {E5_SMALL.name: "-e5", BGE_SMALL.name: "-bge", E5_SMALL_V2.name: "-e5v2"}


@dataclass(frozen=True)
class IndexedDataset:
    settings: Settings
    """Settings whose ``index_prefix`` points at this dataset's index."""
    index: str
    documents: int
    reused: bool


def dataset_settings(settings: Settings, dataset_name: str) -> Settings:
    """The settings of ``dataset_name``'s eval index: a prefix of its own, and one per encoder
    (``-e5`` for multilingual-e5-small, ``-bge`` for bge-small-en-v1.5; all-MiniLM-L6-v2's keeps the
    prefix it always had)."""
    encoder = ENCODER_SUFFIX.get(settings.embedding_model, "")
    return settings.model_copy(update={"index_prefix": f"{settings.index_prefix}-{dataset_name}{encoder}"})


def fingerprint(dataset: Dataset, model: str, dimension: int) -> str:
    h = hashlib.sha256(f"{model}\x1f{dimension}".encode())
    h.update(json.dumps(load_template("memories"), sort_keys=True).encode())  # a new mapping: a new index
    for tenant in sorted(dataset.memories):
        for m in sorted(dataset.memories[tenant], key=lambda m: m.memory_id):
            ts = m.timestamp.isoformat() if m.timestamp else ""
            h.update(f"{tenant}\x1f{m.memory_id}\x1f{content_hash(m.content)}\x1f{m.node_id}\x1f{ts}\n".encode())
    return h.hexdigest()[:32]


def _current_fingerprint(client: OpenSearch, alias: str) -> str | None:
    if not client.indices.exists_alias(name=alias):
        return None
    mapping = client.indices.get_mapping(index=alias)
    for body in mapping.values():
        return (body.get("mappings", {}).get("_meta") or {}).get("eval_fingerprint")
    return None


def index_action(index: str, tenant: str, memory: Memory, vector: Sequence[float], model: str) -> dict[str, Any]:
    """One bulk ``index`` action for an evaluation or benchmark memory: the service's document
    (``build_memory_doc``), its deterministic id and the tenant routing."""
    return {
        "_op_type": "index",
        "_id": memory_doc_id(tenant, memory.memory_id),
        "_routing": tenant,
        "_source": build_memory_doc(
            tenant_id=tenant,
            memory_id=memory.memory_id,
            content=memory.content,
            embedding=vector,
            embedding_model=model,
            node_id=memory.node_id,
            timestamp=memory.timestamp,
            source=memory.source,
            conversation_id=memory.conversation_id,
        ),
    }


def _actions(dataset: Dataset, embedder: Embedder, index: str) -> Iterator[dict[str, Any]]:
    for tenant, mems in dataset.memories.items():
        vectors = embedder.encode([m.content for m in mems])
        for m, vec in zip(mems, vectors, strict=True):
            yield index_action(index, tenant, m, vec, embedder.name)


def index_dataset(
    client: OpenSearch,
    settings: Settings,
    dataset: Dataset,
    embedder: Embedder,
    *,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
) -> IndexedDataset:
    """Create ``<prefix>-<dataset>`` and load every memory (text + vector, routed by tenant),
    unless an index with the same fingerprint is already there. Raises on any failed document."""
    s = dataset_settings(settings, dataset.name)
    fp = fingerprint(dataset, embedder.name, embedder.dimension)
    if not force and _current_fingerprint(client, s.memories_alias) == fp:
        index = next(iter(client.indices.get_alias(name=s.memories_alias)))
        count = int(client.count(index=s.memories_alias)["count"])
        if count == dataset.n_memories:
            install_memories_index(client, s, embedder.dimension)  # fields and views added since (idempotent)
            return IndexedDataset(s, index, count, reused=True)
    delete_memories(client, s)
    index = install_memories_index(client, s, embedder.dimension)
    client.indices.put_settings(index=index, body={"index": {"refresh_interval": "-1"}})
    failed: list[str] = []
    for ok, item in streaming_bulk(
        client,
        _actions(dataset, embedder, index),
        index=index,  # in the path: the engine refuses an index named in a bulk body
        chunk_size=BULK_CHUNK,
        raise_on_error=False,
        max_retries=3,
        request_timeout=120,
    ):
        if not ok:
            failed.append(str(item)[:300])
        elif progress:
            progress(1)
    if failed:
        raise RuntimeError(f"{len(failed)} documents failed to index, first: {failed[0]}")
    client.indices.put_settings(index=index, body={"index": {"refresh_interval": "1s"}})
    client.indices.refresh(index=index)
    # one segment per shard: HNSW search over one graph is faster and the results reproducible
    client.indices.forcemerge(index=index, max_num_segments=1, request_timeout=600)
    meta = index_meta(encoder_info(s.embedding_model))  # _meta is replaced whole: the encoder's record stays
    client.indices.put_mapping(index=index, body={"_meta": {**meta, "eval_fingerprint": fp}})
    count = int(client.count(index=index)["count"])
    if count != dataset.n_memories:
        raise RuntimeError(f"index {index} holds {count} documents, expected {dataset.n_memories}")
    return IndexedDataset(s, index, count, reused=False)


def delete_memories(client: OpenSearch, settings: Settings) -> None:
    """Drop this prefix's memories indices and template, and nothing else: ``delete_indices``'
    ``<prefix>-*`` would also take another encoder's evaluation index of the same dataset
    (``bt-evalrun-scifact-*`` holds ``bt-evalrun-scifact-bge-…``), under a run that reads it."""
    names = IndexNames.of(settings)
    client.indices.delete(index=names.memories_pattern, params={"expand_wildcards": "all"}, ignore=[404])
    client.indices.delete_index_template(name=names.memories_template, ignore=[404])


def bulk_memories(
    client: OpenSearch,
    settings: Settings,
    tenant: str,
    memories: Sequence[Mapping[str, Any]],
    label: str,
    embedder: Embedder | None = None,
) -> int:
    """Write a small hand-made set as tenant ``tenant``'s memories, as the workers write them, and
    refresh: each of ``memories`` holds ``build_memory_doc``'s keywords but the tenant, the vector
    and the model (``memory_id``, ``content``, any others). Vectors from ``embedder`` (the settings'
    document model by default). A RuntimeError naming ``label`` when any memory fails."""
    vectors = (embedder or make_document_embedder(settings)).encode([m["content"] for m in memories])
    actions = [
        {
            "_id": memory_doc_id(tenant, m["memory_id"]),
            "_routing": tenant,
            **build_memory_doc(tenant_id=tenant, embedding=vec, embedding_model=settings.embedding_model, **m),
        }
        for m, vec in zip(memories, vectors, strict=True)
    ]
    _, errors = bulk(client, actions, index=settings.memories_alias, refresh="wait_for", raise_on_error=False)
    if errors:
        raise RuntimeError(f"{label}: {len(errors)} memories failed to index: {errors[:1]}")
    return len(actions)
