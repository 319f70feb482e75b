"""A tenant's recall across shard layouts, routed and unrouted, in one run (issue 56, item 1).

Over the shared index (``shared.py``) at each shard layout: the ``big-*`` tenants (~1k memories
each) are asked real LoCoMo questions of their conversation, one recall at a time, through
``Retriever.recall`` (the service's default mode: the tenant's own BM25, the ``_msearch`` routed to
the tenant's shards) and through the same recall sent **unrouted** (``UnroutedRetriever``: no
``routing`` in the ``_msearch`` header, the behaviour before routing; the tenant's counts stay
routed, as they were). The query vectors are cached (the encoder is out). Every path and layout is
interleaved question by question, in a rotating order, so the machine's other load falls on all
of them alike.

Per path: the node's process CPU per recall (``/proc``, as ``cpu.py``: everything the node did
meanwhile, other users' searches included), the shard-level search time and the shard searches
per recall from the index's own statistics (only this index: no other user's search counts),
this process's CPU, and wall p50/p95. The answers (ids in order) of every layout are compared
with the first layout's.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson
from opensearchpy import OpenSearch

from brain_lab.bench.corpus import Pool, cached_embedder
from brain_lab.bench.cpu import node_cpu_ms, node_pids, until_idle
from brain_lab.bench.load import CachedVectors
from brain_lab.bench.shared import Built, SharedLayout, big_tenant, conversations, index_stats, source_conversation
from brain_lab.bench.stats import percentiles
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.scope import TenantScope

MAX_QUERY = 2000


class UnroutedRetriever(Retriever):
    """The service's recall with its ``_msearch`` sent to every shard (no ``routing`` in the
    header): the behaviour before the recall was routed. Everything else is the service's."""

    def msearch_payload(self, scope: TenantScope, bodies: list[dict[str, Any]]) -> str:
        header = orjson.dumps({"search_type": self.search_type})
        return b"".join(header + b"\n" + orjson.dumps(b) + b"\n" for b in bodies).decode()


@dataclass
class PathCost:
    """Sums of one path over its measured recalls."""

    label: str
    n: int = 0
    engine_ms: float = 0.0
    api_ms: float = 0.0
    shard_searches: float = 0.0
    shard_ms: float = 0.0
    walls: list[float] = field(default_factory=list)

    def figures(self, background: float = 0.0) -> dict[str, float]:
        """Per recall; ``background``: the node's CPU ms per wall ms while nothing of ours ran
        (``IDLE``), taken off the engine CPU for ``engine_cpu_net_ms``."""
        n = max(self.n, 1)
        pct = percentiles(self.walls, (50, 95))
        return {
            "n": float(self.n),
            "engine_cpu_ms": self.engine_ms / n,
            "engine_cpu_net_ms": (self.engine_ms - background * sum(self.walls)) / n,
            "api_cpu_ms": self.api_ms / n,
            "shard_searches": self.shard_searches / n,
            "shard_ms": self.shard_ms / n,
            "p50_ms": pct["p50"],
            "p95_ms": pct["p95"],
        }


IDLE = "nothing (a pause as long as a recall: the node's own background)"
IDLE_S = 0.015


def background_rate(idle: PathCost) -> float:
    """The node's CPU ms per wall ms over the idle pauses (pure)."""
    return idle.engine_ms / sum(idle.walls) if idle.walls and sum(idle.walls) > 0 else 0.0


def search_counters(client: OpenSearch, index: str) -> tuple[float, float]:
    """(shard searches, shard query + fetch ms) so far on ``index`` (its own statistics)."""
    st = client.indices.stats(index=index, metric="search")
    s = st["_all"]["total"]["search"]
    return float(s["query_total"]), float(s["query_time_in_millis"]) + float(s["fetch_time_in_millis"])


class IndexMeter:
    """The node's CPU, this process's CPU, wall time and one index's shard searches around a call."""

    def __init__(self, client: OpenSearch) -> None:
        self.client = client
        self.pids = node_pids(client)

    def measure(self, cost: PathCost, index: str, call: Callable[[], Any]) -> Any:
        until_idle()
        q0, s0 = search_counters(self.client, index)
        e0, c0, t0 = node_cpu_ms(self.pids), time.process_time(), time.perf_counter()
        out = call()
        t1, e1 = time.perf_counter(), node_cpu_ms(self.pids)
        c1 = until_idle()
        q1, s1 = search_counters(self.client, index)  # after the CPU: the stats call is not the recall's
        cost.n += 1
        cost.engine_ms += e1 - e0
        cost.api_ms += (c1 - c0) * 1000.0
        cost.shard_searches += q1 - q0
        cost.shard_ms += s1 - s0
        cost.walls.append((t1 - t0) * 1000.0)
        return out


def big_questions(pool: Pool, layout: SharedLayout, n: int, seed: int = 11) -> list[tuple[str, str]]:
    """``n`` distinct (big tenant, question of its conversation) pairs (fixed seed; pure)."""
    convs = list(conversations(pool))
    pairs = sorted(
        {
            (big_tenant(b), q[:MAX_QUERY])
            for b in range(layout.big_tenants)
            for q in pool.queries.get(source_conversation(big_tenant(b), convs), [])
        }
    )
    random.Random(seed).shuffle(pairs)
    return pairs[:n]


def rotated(items: Sequence[Any], i: int) -> list[Any]:
    """``items`` started at position ``i`` modulo their count (pure): each question meets the
    paths in another order."""
    if not items:
        return []
    k = i % len(items)
    return [*items[k:], *items[:k]]


def agreement(base: Sequence[Sequence[str]], other: Sequence[Sequence[str]]) -> int:
    """How many answers (ids in order) of ``other`` equal ``base``'s, position by position (pure)."""
    return sum(1 for a, b in zip(base, other, strict=True) if list(a) == list(b))


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


@dataclass
class ShardsReport:
    layout: dict[str, int]
    questions: int
    rounds: int
    load_avg_before: str
    load_avg_after: str
    indices: list[dict[str, Any]]
    paths: dict[str, dict[str, float]]
    agree: dict[str, int]
    background_cpu_ms_per_s: float


def path_label(built: Built, routed: bool) -> str:
    return f"{built.layout.label}, {'routed' if routed else 'unrouted'}"


def run_shards(
    client: OpenSearch,
    built: Sequence[Built],
    pool: Pool,
    layout: SharedLayout,
    n: int,
    rounds: int = 2,
    log: Callable[[str], None] = print,
) -> ShardsReport:
    """Every layout's recall, routed and unrouted, over the same ``n`` questions, ``rounds``
    times after an unmeasured pass (which also gives the answers compared)."""
    qs = big_questions(pool, layout, n)
    texts = sorted({q for _, q in qs})
    vectors = CachedVectors(dict(zip(texts, cached_embedder(built[0].settings).encode(texts), strict=True)))
    paths: list[tuple[str, Built, Retriever]] = []
    for b in built:
        paths.append((path_label(b, True), b, Retriever(client, b.settings, vectors)))
        paths.append((path_label(b, False), b, UnroutedRetriever(client, b.settings, vectors)))
    answers: dict[str, list[list[str]]] = {label: [] for label, _, _ in paths}
    load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())
    log(f"warm-up: {len(qs)} questions through {len(paths)} paths")
    for tenant, text in qs:
        for label, _, r in paths:
            resp = r.recall(tenant, RecallRequest(query=text, limit=10))
            answers[label].append([m.id for m in resp.results])
    meter = IndexMeter(client)
    costs = {label: PathCost(label) for label, _, _ in paths}
    idle = PathCost(IDLE)
    step = 0
    for rnd in range(rounds):
        for i, (tenant, text) in enumerate(qs, 1):
            for label, b, r in rotated(paths, step):
                req = RecallRequest(query=text, limit=10)
                meter.measure(costs[label], b.index, partial(r.recall, tenant, req))
            meter.measure(idle, built[0].index, partial(time.sleep, IDLE_S))
            step += 1
            if i % 50 == 0:
                log(f"round {rnd + 1}/{rounds}: {i}/{len(qs)} questions, load {os.getloadavg()[0]:.2f}")
    base = path_label(built[0], True)
    agree = {label: agreement(answers[base], answers[label]) for label in answers if label != base}
    return ShardsReport(
        layout={"documents": layout.documents, "big_tenants": layout.big_tenants, "big_size": layout.big_size},
        questions=len(qs),
        rounds=rounds,
        load_avg_before=load_before,
        load_avg_after="/".join(f"{x:.2f}" for x in os.getloadavg()),
        indices=[
            {"layout": b.layout.label, "index": b.index, "how": b.how, "load_s": b.load_s, "merge_s": b.merge_s}
            | index_stats(client, b.index)
            for b in built
        ],
        paths={label: c.figures(background_rate(idle)) for label, c in costs.items()},
        agree=agree,
        background_cpu_ms_per_s=background_rate(idle) * 1000.0,
    )


def ratios_over(paths: dict[str, dict[str, float]], base_label: str) -> list[tuple[str, float, float, float]]:
    """Each path's engine CPU (net of the background), shard time and p95 over those of the path
    ``base_label`` (pure): (path, engine CPU ×, shard ms ×, p95 ×)."""
    base = paths[base_label]
    return [
        (
            label,
            ratio(p["engine_cpu_net_ms"], base["engine_cpu_net_ms"]),
            ratio(p["shard_ms"], base["shard_ms"]),
            ratio(p["p95_ms"], base["p95_ms"]),
        )
        for label, p in paths.items()
    ]


def fanout_ratios(report: ShardsReport, built: Sequence[Built]) -> list[tuple[str, float, float, float]]:
    """Every path over the first layout's routed figures (``ratios_over``)."""
    return ratios_over(report.paths, path_label(built[0], True))
