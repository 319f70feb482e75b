"""Many small tenants in one index beside one tenant alone, in one run (issue 56, item 4).

Over the shared index (``shared.py``: tenants ``small-*`` of ~100 memories each): ``n`` recalls of
random small tenants, each asked a real LoCoMo question of its conversation, against the same
question asked of a tenant of the same size and conversation **alone in an index of its own**
(conversation ``c``'s first small tenant, ``small-0000c``, copied by ``_reindex`` into the index
of prefix ``bt-shared-alone-small-0000c``: one shard, one segment; one such index per conversation
asked). Paths interleaved question by question in a rotating order; an unmeasured pass over the
same pairs first (every path's statistics cached and the engine warm: a steady state, not a first
recall). Figures as ``shards.py``: the node's CPU per recall, the index's own shard time, wall p50/p95.

Then the API's resident memory over ``rss_tenants`` distinct tenants: the API's own objects
(``build_state``, the composition root) serve one recall per tenant (``AppState.recall``: the
StatsCache, the query cache, the intent cache, the recall record), each with the tenant's rate
limit looked up (the KeyStore's per-tenant cache) and a request taken from a per-key bucket (the
rate limiter's local buckets); RSS and the caches' sizes from ``/proc/self/status`` before and after.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from opensearchpy import OpenSearch

from brain_lab.bench.corpus import Pool, cached_embedder
from brain_lab.bench.load import CachedVectors
from brain_lab.bench.shards import IDLE, IDLE_S, IndexMeter, PathCost, background_rate, ratios_over, rotated
from brain_lab.bench.shared import PREFIX, Built, SharedLayout, conversations, small_tenant, source_conversation
from brain_search.config import Settings
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.templates import delete_indices, install_memories_index

MAX_QUERY = 2000
ALONE = "one tenant alone in its own index"


def small_questions(pool: Pool, layout: SharedLayout, n: int, seed: int = 13) -> list[tuple[str, str]]:
    """``n`` (random small tenant, random question of its conversation) pairs (fixed seed; pure)."""
    convs = list(conversations(pool))
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    while len(out) < n and layout.small_tenants:
        tenant = small_tenant(rng.randrange(layout.small_tenants))
        qs = pool.queries.get(source_conversation(tenant, convs), [])
        if qs:
            out.append((tenant, rng.choice(qs)[:MAX_QUERY]))
    return out


def lone_tenant(tenant: str, convs: Sequence[str]) -> str:
    """The small tenant standing alone for ``tenant``: the first of the same conversation (pure)."""
    return small_tenant(convs.index(source_conversation(tenant, convs)))


def alone_settings(settings: Settings, tenant: str) -> Settings:
    return settings.model_copy(
        update={"index_prefix": f"{PREFIX}-alone-{tenant}", "shards": 1, "routing_partition_size": 1, "replicas": 0}
    )


def build_alone(client: OpenSearch, source: Built, tenant: str, dimension: int) -> Settings:
    """``tenant``'s memories copied from ``source``'s index into an index of their own."""
    s = alone_settings(source.settings, tenant)
    delete_indices(client, s)
    index = install_memories_index(client, s, dimension)
    client.reindex(
        body={"source": {"index": source.index, "query": {"term": {"tenant_id": tenant}}}, "dest": {"index": index}},
        params={"wait_for_completion": "true", "refresh": "true"},
        request_timeout=600,
    )
    client.indices.forcemerge(index=index, max_num_segments=1, request_timeout=600)
    return s


@dataclass
class TenantsReport:
    questions: int
    rounds: int
    tenants_sampled: int
    load_avg_before: str
    load_avg_after: str
    paths: dict[str, dict[str, float]]
    rss: dict[str, Any]
    background_cpu_ms_per_s: float


def shared_label(b: Built) -> str:
    return f"random tenants, shared index ({b.layout.label})"


def run_tenants(
    client: OpenSearch,
    built: Sequence[Built],
    pool: Pool,
    layout: SharedLayout,
    n: int,
    rounds: int = 2,
    log: Callable[[str], None] = print,
) -> tuple[TenantsReport, list[Settings]]:
    """Random small tenants in every layout's shared index beside the same questions asked of a
    tenant alone; returns the report and the lone tenants' settings (to drop them after)."""
    convs = list(conversations(pool))
    qs = small_questions(pool, layout, n)
    texts = sorted({q for _, q in qs})
    vectors = CachedVectors(dict(zip(texts, cached_embedder(built[0].settings).encode(texts), strict=True)))
    dimension = int(pool.vectors.shape[1])
    lones = sorted({lone_tenant(t, convs) for t, _ in qs})
    log(f"{len(lones)} tenants alone in indices of their own (copied from {built[0].index})")
    alone = {t: build_alone(client, built[0], t, dimension) for t in lones}
    alone_r = {t: Retriever(client, s, vectors) for t, s in alone.items()}
    shared = [(shared_label(b), b.index, Retriever(client, b.settings, vectors)) for b in built]

    def calls(tenant: str, text: str) -> list[tuple[str, str, Callable[[], Any]]]:
        req = RecallRequest(query=text, limit=10)
        lone = lone_tenant(tenant, convs)
        out: list[tuple[str, str, Callable[[], Any]]] = [
            (label, index, partial(r.recall, tenant, req)) for label, index, r in shared
        ]
        out.append((ALONE, alone[lone].memories_alias, partial(alone_r[lone].recall, lone, req)))
        return out

    load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())
    log(f"warm-up: {len(qs)} random tenants' questions through {len(shared) + 1} paths")
    for tenant, text in qs:
        for _, _, call in calls(tenant, text):
            call()
    meter = IndexMeter(client)
    costs: dict[str, PathCost] = {}
    idle = PathCost(IDLE)
    step = 0
    for rnd in range(rounds):
        for i, (tenant, text) in enumerate(qs, 1):
            for label, index, call in rotated(calls(tenant, text), step):
                meter.measure(costs.setdefault(label, PathCost(label)), index, call)
            meter.measure(idle, built[0].index, partial(time.sleep, IDLE_S))
            step += 1
            if i % 50 == 0:
                log(f"round {rnd + 1}/{rounds}: {i}/{len(qs)} questions, load {os.getloadavg()[0]:.2f}")
    report = TenantsReport(
        questions=len(qs),
        rounds=rounds,
        tenants_sampled=len({t for t, _ in qs}),
        load_avg_before=load_before,
        load_avg_after="/".join(f"{x:.2f}" for x in os.getloadavg()),
        paths={label: c.figures(background_rate(idle)) for label, c in costs.items()},
        rss={},
        background_cpu_ms_per_s=background_rate(idle) * 1000.0,
    )
    return report, list(alone.values())


def alone_ratios(report: TenantsReport) -> list[tuple[str, float, float, float]]:
    """Every path over the lone tenant's figures (``ratios_over``)."""
    return ratios_over(report.paths, ALONE)


def rss_kib(status: str) -> int:
    """``VmRSS`` of a ``/proc/<pid>/status`` text, KiB (pure)."""
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise ValueError("no VmRSS line")


def own_rss_kib() -> int:
    with open("/proc/self/status") as fh:
        return rss_kib(fh.read())


def tenant_ids(count: int) -> list[str]:
    """``count`` distinct tenant ids: the shared index's small tenants, then ids past them where
    it holds fewer (tenants with no memory: a recall of theirs still fills every per-tenant cache;
    pure)."""
    return [small_tenant(i) for i in range(count)]


def _cache_sizes(state: Any) -> dict[str, int]:
    return {
        "tenant statistics (StatsCache)": len(state.retriever.stats_cache._stats),
        "query vectors (QueryCache)": len(state.query_cache._data),
        "key store: tenants' rate limits": len(state.keys._limits),
        "rate limiter: local buckets": len(state.limiter.local._buckets) if state.limiter else 0,
        "feedback retention per tenant (FeedbackStore)": len(state.feedback.store._retention),
        "recall records pending (RecallRecorder)": len(state.feedback.recorder._pending),
    }


def rss_over_tenants(
    settings: Settings,
    pool: Pool,
    layout: SharedLayout,
    count: int,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The API's objects (``build_state``) serving one recall for each of ``count`` tenants;
    this process's RSS and the caches' sizes before, at each tenth, and after."""
    from brain_search.api.app import build_state

    convs = list(conversations(pool))
    rng = random.Random(17)
    state = build_state(settings)
    try:
        ids = tenant_ids(count)
        warm = ids[: min(50, len(ids))]
        for t in warm:  # every lazy piece loaded before the first reading
            state.recall(t, RecallRequest(query="what did we decide last week", limit=10))
        before, sizes_before = own_rss_kib(), _cache_sizes(state)
        log(f"RSS before: {before / 1024:.0f} MiB; caches {sizes_before}")
        steps: list[tuple[int, int]] = []
        t0 = time.perf_counter()
        for i, tenant in enumerate(ids, 1):
            qs = pool.queries.get(source_conversation(tenant, convs), []) or ["what happened"]
            state.keys.rate_limit(tenant)
            if state.limiter is not None:
                state.limiter.local.wait_s(f"key-of-{tenant}", state.limiter.default)
            state.recall(tenant, RecallRequest(query=rng.choice(qs)[:MAX_QUERY], limit=10))
            if i % max(1, count // 10) == 0:
                steps.append((i, own_rss_kib()))
                rate = i / (time.perf_counter() - t0)
                log(f"{i:,}/{count:,} tenants: RSS {steps[-1][1] / 1024:.0f} MiB ({rate:.0f}/s)")
        after = own_rss_kib()
        return {
            "tenants": count,
            "tenants_with_memories": min(count, layout.small_tenants),
            "rss_before_kib": before,
            "rss_after_kib": after,
            "rss_steps_kib": steps,
            "caches_before": sizes_before,
            "caches_after": _cache_sizes(state),
            "seconds": time.perf_counter() - t0,
        }
    finally:
        state.feedback.recorder.flush()
        state.close()
