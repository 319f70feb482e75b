"""One large shared memories index of many tenants, at several shard layouts (issue 56, items 1
and 4).

What it holds (``SharedLayout``): ``big_tenants`` tenants of ``big_size`` memories (``big-<i>``,
one LoCoMo conversation each: its real turns, then recycled copies of them), then as many tenants
of ``small_size`` memories as fill ``size`` (``small-<i>``: ``small_size`` consecutive turns of one
conversation). Texts are real LoCoMo turns; vectors are the cached all-MiniLM-L6-v2 ones, every
recycled row with Gaussian noise (``corpus.py``'s recycling: cosine ≈ 0.98 to the original). Every
row but a big tenant's first copy is recycled, so one text appears in many tenants.

The first shard layout is bulk-loaded through the normal bulk path (``index_action``: the
service's document, id and routing); the others are copied from it with the engine's
``_reindex`` (which keeps each document's ``_id`` and ``_routing``, so the target's own
``routing_partition_size`` places it), then each is force-merged to one segment per shard. An index
whose count is already right is reused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from opensearchpy import OpenSearch

from brain_lab.bench.corpus import Pool, bulk_rows, noised, replica_of, size_label
from brain_lab.eval.datasets import Memory
from brain_search.config import Settings
from brain_search.index_names import IndexNames
from brain_search.store.templates import delete_indices, install_memories_index, memories_template

PREFIX = "bt-shared"


@dataclass(frozen=True)
class ShardLayout:
    """Primary shards and the routing partition (how many of them one tenant is spread over).

    ``routing_shards``: the index is created with ``number_of_routing_shards`` = its shards. The
    service's template sets only ``routing_partition_size``; on OpenSearch 3.5.0 (and every
    version since Elasticsearch 7, OpenSearch#17472) the engine then computes a larger routing
    shard count by default, and a tenant's partition offsets fall on the same shard: every tenant
    lives on one shard and a routed search asks one. With the routing shards set, a tenant is
    spread over ``partition`` shards, as the chart intends."""

    shards: int
    partition: int = 1
    routing_shards: bool = False

    @property
    def label(self) -> str:
        text = f"{self.shards} shard{'s' if self.shards > 1 else ''}, partition {self.partition}"
        return f"{text}, routing shards {self.shards}" if self.routing_shards else text

    @property
    def slug(self) -> str:
        return f"{self.shards}s{self.partition}p" + ("r" if self.routing_shards else "")


def parse_layouts(text: str) -> list[ShardLayout]:
    """``1,3,12:3,12:3+`` → layouts (``shards[:partition][+]``, partition 1 when left out, ``+``:
    routing shards = shards; pure). A partition must be smaller than the shards, as the engine
    requires (1 always allowed)."""
    out: list[ShardLayout] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        routing = part.endswith("+")
        shards, _, partition = part.removesuffix("+").partition(":")
        layout = ShardLayout(int(shards), int(partition) if partition else 1, routing)
        if layout.shards < 1 or layout.partition < 1:
            raise ValueError(f"{part!r}: shards and partition must be ≥ 1")
        if layout.partition > 1 and layout.partition >= layout.shards:
            raise ValueError(f"{part!r}: the routing partition must be smaller than the shards")
        out.append(layout)
    if not out:
        raise ValueError("no shard layout given")
    return out


@dataclass(frozen=True)
class SharedLayout:
    """What the shared index holds (pure)."""

    size: int
    big_tenants: int = 10
    big_size: int = 1_000
    small_size: int = 100

    @property
    def small_tenants(self) -> int:
        return max(0, self.size - self.big_tenants * self.big_size) // self.small_size

    @property
    def documents(self) -> int:
        return self.big_tenants * self.big_size + self.small_tenants * self.small_size


def big_tenant(i: int) -> str:
    return f"big-{i:02d}"


def small_tenant(i: int) -> str:
    return f"small-{i:05d}"


def conversations(pool: Pool) -> dict[str, list[int]]:
    """The pool's tenants (one LoCoMo conversation each) → their rows in the pool (pure)."""
    out: dict[str, list[int]] = {}
    for j, (tenant, _) in enumerate(pool.memories):
        out.setdefault(tenant, []).append(j)
    return out


def tenant_rows(layout: SharedLayout, convs: Sequence[str]) -> Iterator[tuple[str, str, int, bool]]:
    """(tenant, its conversation, position in that conversation, a big tenant's first copy) per
    row, big tenants first (pure). Positions past the conversation's end are recycled copies."""
    for b in range(layout.big_tenants):
        conv = convs[b % len(convs)]
        for pos in range(layout.big_size):
            yield big_tenant(b), conv, pos, True
    per_conv = len(convs)
    for s in range(layout.small_tenants):
        conv = convs[s % per_conv]
        start = (s // per_conv) * layout.small_size
        for i in range(layout.small_size):
            yield small_tenant(s), conv, start + i, False


def source_conversation(tenant: str, convs: Sequence[str]) -> str:
    """The conversation whose turns ``tenant`` holds (and whose questions it is asked; pure)."""
    kind, _, num = tenant.partition("-")
    if kind not in ("big", "small") or not num.isdigit():
        raise ValueError(f"{tenant!r} is no tenant of the shared index")
    return convs[int(num) % len(convs)]


def shared_rows(
    pool: Pool, layout: SharedLayout, noise: float = 0.01, seed: int = 7
) -> Iterator[tuple[str, Memory, np.ndarray]]:
    """(tenant, memory, vector) of every row of the shared index, in a fixed order."""
    by_conv = conversations(pool)
    convs = list(by_conv)
    rng = np.random.default_rng(seed)
    for tenant, conv, pos, big in tenant_rows(layout, convs):
        rows = by_conv[conv]
        replica, k = divmod(pos, len(rows))
        _, mem = pool.memories[rows[k]]
        vec = pool.vectors[rows[k]]
        if replica or not big:
            vec = noised(vec, rng, noise)
        if replica:
            mem = replica_of(mem, replica)
        yield tenant, mem, vec


def layout_settings(settings: Settings, layout: SharedLayout, shards: ShardLayout) -> Settings:
    """The settings of one shard layout's index: its own prefix, shards and partition, no replica."""
    return settings.model_copy(
        update={
            "index_prefix": f"{PREFIX}-{size_label(layout.size)}-{shards.slug}",
            "shards": shards.shards,
            "routing_partition_size": shards.partition,
            "replicas": 0,
        }
    )


@dataclass(frozen=True)
class Built:
    layout: ShardLayout
    settings: Settings
    index: str
    documents: int
    how: str
    """bulk, _reindex or reused"""
    load_s: float
    merge_s: float


def _count(client: OpenSearch, settings: Settings) -> int:
    if not client.indices.exists_alias(name=settings.memories_alias):
        return 0
    client.indices.refresh(index=settings.memories_alias)
    return int(client.count(index=settings.memories_alias)["count"])


def _fresh_index(client: OpenSearch, settings: Settings, dimension: int, routing_shards: bool) -> str:
    """The layout's empty memories index behind its alias (the small indices are not needed)."""
    delete_indices(client, settings)
    if routing_shards:  # the template first, then the index with the one setting it lacks
        client.indices.put_index_template(
            name=IndexNames.of(settings).memories_template, body=memories_template(settings, dimension)
        )
        client.indices.create(
            index=settings.memories_index,
            body={"settings": {"index": {"number_of_routing_shards": settings.shards}}},
            params={"wait_for_active_shards": "1"},
        )
    index = install_memories_index(client, settings, dimension)
    client.indices.put_settings(index=index, body={"index": {"refresh_interval": "-1"}})
    return index


def _bulk(
    client: OpenSearch, settings: Settings, index: str, pool: Pool, layout: SharedLayout, log: Callable[[str], None]
) -> None:
    rows = shared_rows(pool, layout)
    bulk_rows(client, index, rows, settings.embedding_model, layout.documents, log, label=f"{index}: ")


def reindexed(status: dict[str, Any]) -> int:
    """Documents a ``_reindex`` task wrote so far (pure): a sliced one counts in its slices."""
    parts = [x for x in status.get("slices") or [] if x] or [status]
    return sum(int(p.get("created", 0)) + int(p.get("updated", 0)) for p in parts)


def _reindex(client: OpenSearch, source: str, dest: str, total: int, log: Callable[[str], None]) -> None:
    """The engine copies ``source`` into ``dest`` (ids and routing kept), two slices; progress
    from the task every 10 s."""
    task = client.reindex(
        body={"source": {"index": source, "size": 1000}, "dest": {"index": dest}},
        params={"wait_for_completion": "false", "slices": "2", "refresh": "false"},
    )["task"]
    t0 = time.perf_counter()
    while True:
        time.sleep(10.0)
        got = client.tasks.get(task_id=task)
        # the parent holds only its finished slices: the running ones are its child tasks
        running = client.tasks.list(params={"parent_task_id": task, "detailed": "true"})
        children = [t["status"] for n in running.get("nodes", {}).values() for t in n.get("tasks", {}).values()]
        done = reindexed(got["task"]["status"]) + sum(reindexed(c) for c in children)
        if got.get("completed"):
            failures = (got.get("response") or {}).get("failures") or []
            if failures or got.get("error"):
                raise RuntimeError(f"_reindex into {dest} failed: {str(failures or got.get('error'))[:300]}")
            return
        log(f"{dest}: {done:,} / {total:,} copied by _reindex ({done / (time.perf_counter() - t0):,.0f}/s)")


def build_shared(
    client: OpenSearch,
    settings: Settings,
    pool: Pool,
    layout: SharedLayout,
    shard_layouts: Sequence[ShardLayout],
    *,
    force: bool = False,
    merge: bool = True,
    log: Callable[[str], None] = print,
) -> list[Built]:
    """Every layout's index, the first bulk-loaded, the rest copied from it by ``_reindex``."""
    dimension = int(pool.vectors.shape[1])
    out: list[Built] = []
    for n, shards in enumerate(shard_layouts):
        s = layout_settings(settings, layout, shards)
        if not force and _count(client, s) == layout.documents:
            index = next(iter(client.indices.get_alias(name=s.memories_alias)))
            out.append(Built(shards, s, index, layout.documents, "reused", 0.0, 0.0))
            log(f"{index}: {layout.documents:,} memories, reused")
            continue
        index = _fresh_index(client, s, dimension, shards.routing_shards)
        t0 = time.perf_counter()
        if n == 0:
            _bulk(client, s, index, pool, layout, log)
            how = "bulk"
        else:
            _reindex(client, out[0].index, index, layout.documents, log)
            how = "_reindex"
        client.indices.put_settings(index=index, body={"index": {"refresh_interval": "1s"}})
        client.indices.refresh(index=index)
        load_s = time.perf_counter() - t0
        merge_s = 0.0
        if merge:
            log(f"{index}: loaded ({how}) in {load_s:.0f} s; force-merging to one segment per shard")
            t1 = time.perf_counter()
            client.indices.forcemerge(index=index, max_num_segments=1, request_timeout=3600)
            merge_s = time.perf_counter() - t1
        count = _count(client, s)
        if count != layout.documents:
            raise RuntimeError(f"{index} holds {count:,} memories, expected {layout.documents:,}")
        log(f"{index}: {count:,} memories by {how} in {load_s:.0f} s, merged in {merge_s:.0f} s")
        out.append(Built(shards, s, index, count, how, load_s, merge_s))
    return out


def drop_shared(client: OpenSearch, built: Sequence[Built]) -> None:
    """Delete every layout's indices (their prefix: memories and small indices)."""
    for b in built:
        delete_indices(client, b.settings)


def index_stats(client: OpenSearch, index: str) -> dict[str, Any]:
    """Segments, documents and store size of ``index``'s primaries."""
    st = client.indices.stats(index=index, metric="docs,segments,store")
    prim = next(iter(st["indices"].values()))["primaries"]
    return {
        "documents": int(prim["docs"]["count"]),
        "segments": int(prim["segments"]["count"]),
        "store_bytes": int(prim["store"]["size_in_bytes"]),
    }
