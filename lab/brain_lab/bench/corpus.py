"""Benchmark corpora of 10k, 100k, 1M memories, bulk-loaded through the normal bulk path.

The texts are real: every LoCoMo turn (5,882 memories; 10 tenants, one per conversation; the
sessions as knowledge-graph nodes; the session dates as timestamps), with their real
all-MiniLM-L6-v2 vectors from the evaluation's disk cache (encoded once, then read back). With
``scifact`` the 5,183 SciFact abstracts (tenant ``scifact``, long documents) join the pool; their
vectors are encoded on first use (about 400 s on two idle cores). A corpus of N memories takes the
first N of the pool; past its end the pool is recycled: replica ``r`` of a memory keeps its tenant,
node and text, gets the id ``<id>~r<r>`` and its cached vector plus Gaussian noise (``noise`` per
component, then re-normalised; 0.01 gives a cosine of about 0.98 to the original). So a 100k
corpus is the same tenants, each about 17× larger, not 100k distinct texts: BM25 sees repeated
documents, HNSW sees realistic but clustered vectors. Say so next to any figure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np
from opensearchpy import OpenSearch
from opensearchpy.helpers import parallel_bulk

from brain_lab.eval.datasets import Memory, load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.indexing import index_action
from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder, OnnxQueryEmbedder
from brain_search.encoders.factory import make_embedder
from brain_search.graph.store import GraphStore
from brain_search.store.indices import install_all
from brain_search.store.templates import delete_indices

BULK_CHUNK = 500
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}


def parse_size(label: str) -> int:
    """``10k`` / ``100k`` / ``1m`` / a plain number → a count of memories."""
    key = label.strip().lower()
    if key in SIZES:
        return SIZES[key]
    if key.endswith("k"):
        return int(float(key[:-1]) * 1_000)
    if key.endswith("m"):
        return int(float(key[:-1]) * 1_000_000)
    return int(key)


REPLICA_MARK = "~r"


def replica_id(memory_id: str, replica: int) -> str:
    return f"{memory_id}{REPLICA_MARK}{replica}"


def original_id(memory_id: str) -> str:
    """The memory a recycled replica copies (itself when it is an original)."""
    return memory_id.split(REPLICA_MARK, 1)[0]


def size_label(n: int) -> str:
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    if n % 1_000 == 0:
        return f"{n // 1_000}k"
    return str(n)


def corpus_settings(settings: Settings, size: int, prefix: str = "bt-perfrun") -> Settings:
    """The index prefix of one benchmark corpus (never the developer's ``brain``)."""
    return settings.model_copy(update={"index_prefix": f"{prefix}-{size_label(size)}"})


@dataclass(frozen=True)
class Pool:
    """The real memories the corpora are cut from, with their cached vectors."""

    tenants: list[str]
    memories: list[tuple[str, Memory]]
    vectors: np.ndarray
    queries: dict[str, list[str]]
    """tenant → real queries of that tenant (LoCoMo questions, SciFact claims)."""

    def __len__(self) -> int:
        return len(self.memories)


def loaded_part(pool: Pool, size: int) -> Pool:
    """What a corpus of ``size`` memories holds of ``pool`` (pure): its first ``size`` memories
    (``corpus_rows``; the whole pool past its length, as recycled copies), with only the tenants
    and questions of those. A workload drawn from it names no node, tenant or memory the corpus
    lacks (``load_corpus`` creates the graph nodes of the loaded memories only)."""
    if size <= 0 or size >= len(pool):
        return pool
    memories = pool.memories[:size]
    held = {t for t, _ in memories}
    return Pool(
        [t for t in pool.tenants if t in held],
        memories,
        pool.vectors[:size],
        {t: q for t, q in pool.queries.items() if t in held},
    )


INT8_SUFFIX = "-int8"


def cached_embedder(
    settings: Settings, progress: Callable[[int], None] | None = None, int8: bool = False
) -> CachedEmbedder:
    """The evaluation's disk cache of vectors (shared by every checkout of this machine).

    ``int8``: the API's int8 query encoder (about 2× faster; cosine ≈ 0.994 to the fp32 vector),
    cached under its own name so the evaluation's fp32 vectors are never mixed with its own."""

    def factory() -> Embedder:
        if int8:
            # every word piece the model reads: the pool's memories are documents, not queries
            return OnnxQueryEmbedder(
                settings.models_dir, settings.embedding_model, 0, True, max_tokens=256, batch_size=64
            )
        return make_embedder(settings)

    return CachedEmbedder(
        settings.cache_dir / "embeddings",
        settings.embedding_model + (INT8_SUFFIX if int8 else ""),
        settings.embedding_dimension,
        factory,
        progress,
    )


def load_pool(settings: Settings, embedder: Embedder, scifact: bool = False) -> Pool:
    data = resolve_data_dir(settings)
    datasets = [load_locomo(data)]
    if scifact:
        datasets += [load_scifact(data, "test"), load_scifact(data, "dev")]
    memories: list[tuple[str, Memory]] = []
    queries: dict[str, list[str]] = {}
    seen: set[str] = set()
    for ds in datasets:
        for tenant, mems in ds.memories.items():
            if tenant not in seen:
                memories.extend((tenant, m) for m in mems)
                seen.add(tenant)
        for q in ds.queries:
            queries.setdefault(q.tenant_id, []).append(q.text)
    vectors = embedder.encode([m.content for _, m in memories])
    tenants = list(dict.fromkeys(t for t, _ in memories))
    return Pool(tenants, memories, np.asarray(vectors, dtype=np.float32), queries)


def corpus_rows(pool: Pool, size: int, noise: float = 0.01, seed: int = 7) -> Iterator[tuple[str, Memory, np.ndarray]]:
    """(tenant, memory, vector) for the first ``size`` memories of the recycled pool."""
    n = len(pool)
    rng = np.random.default_rng(seed)
    for i in range(size):
        replica, j = divmod(i, n)
        tenant, mem = pool.memories[j]
        vec = pool.vectors[j]
        if replica:
            vec = noised(vec, rng, noise)
            mem = replica_of(mem, replica)
        yield tenant, mem, vec


def noised(vec: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    """A recycled copy's vector: ``vec`` plus per-component noise, normalised again."""
    vec = vec + np.asarray(rng.normal(0.0, noise, vec.shape[0]), dtype=np.float32)
    return vec / (np.linalg.norm(vec) or 1.0)


def replica_of(mem: Memory, replica: int) -> Memory:
    """The ``replica``-th recycled copy of ``mem``: the same memory under ``replica_id``."""
    return replace(mem, memory_id=replica_id(mem.memory_id, replica))


def bulk_rows(
    client: OpenSearch,
    index: str,
    rows: Iterator[tuple[str, Memory, np.ndarray]],
    model: str,
    total: int,
    log: Callable[[str], None],
    threads: int = 2,
    label: str = "",
) -> None:
    """Send (tenant, memory, vector) rows to ``index`` by parallel bulk, progress every 20,000;
    raises when any memory failed to index."""
    t0 = time.perf_counter()
    actions = (index_action(index, tenant, m, vec.tolist(), model) for tenant, m, vec in rows)
    failed: list[str] = []
    for done, (ok, item) in enumerate(
        parallel_bulk(
            client,
            actions,
            index=index,  # in the path: the engine refuses an index named in a bulk body
            thread_count=threads,
            chunk_size=BULK_CHUNK,
            raise_on_error=False,
            request_timeout=300,
        ),
        start=1,
    ):
        if not ok:
            failed.append(str(item)[:300])
        if done % 20_000 == 0:
            log(f"{label}{done:,} / {total:,} memories sent ({done / (time.perf_counter() - t0):,.0f}/s)")
    if failed:
        raise RuntimeError(f"{len(failed)} memories failed to index, first: {failed[0]}")


@dataclass(frozen=True)
class LoadReport:
    size: int
    index: str
    documents: int
    reused: bool
    load_s: float
    merge_s: float
    docs_per_s: float


LOADTEST_SOURCE = "loadtest"  # memories written by the load test's write items


def corpus_count(client: OpenSearch, settings: Settings) -> int:
    """Memories of the corpus itself (what a load test wrote does not count)."""
    if not client.indices.exists_alias(name=settings.memories_alias):
        return 0
    body = {"query": {"bool": {"must_not": [{"term": {"source": LOADTEST_SOURCE}}]}}}
    return int(client.count(index=settings.memories_alias, body=body)["count"])


def load_corpus(
    client: OpenSearch,
    settings: Settings,
    pool: Pool,
    size: int,
    *,
    force: bool = False,
    noise: float = 0.01,
    threads: int = 2,
    log: Callable[[str], None] = print,
) -> LoadReport:
    """Create ``settings``' memories index (its own prefix) and bulk-load ``size`` memories:
    refresh off and no replicas while loading, then refresh and force-merge to one segment (one
    HNSW graph per shard: faster search, reproducible figures). Reuses a complete earlier load
    unless ``force``. The graph nodes of the corpus are created too, so node filters resolve."""
    if not force and corpus_count(client, settings) == size:
        index = next(iter(client.indices.get_alias(name=settings.memories_alias)))
        return LoadReport(size, index, size, True, 0.0, 0.0, 0.0)
    delete_indices(client, settings)
    index = install_all(client, settings, pool.vectors.shape[1])
    graph = GraphStore(client, settings)
    client.indices.put_settings(index=index, body={"index": {"refresh_interval": "-1"}})
    t0 = time.perf_counter()
    bulk_rows(client, index, corpus_rows(pool, size, noise), settings.embedding_model, size, log, threads)
    client.indices.put_settings(index=index, body={"index": {"refresh_interval": "1s"}})
    client.indices.refresh(index=index)
    load_s = time.perf_counter() - t0
    log(f"loaded {size:,} memories in {load_s:.0f} s; force-merging to one segment")
    t1 = time.perf_counter()
    client.indices.forcemerge(index=index, max_num_segments=1, request_timeout=3600)
    merge_s = time.perf_counter() - t1
    nodes = sorted({(t, m.node_id) for t, m in pool.memories[: min(size, len(pool))] if m.node_id})
    for tenant, label in nodes:
        graph.ensure(tenant, label)
    count = corpus_count(client, settings)
    if count != size:
        raise RuntimeError(f"index {index} holds {count} documents, expected {size}")
    return LoadReport(size, index, count, False, load_s, merge_s, size / load_s)
