"""CPU per recall, the engine's and the API's, beside a bare hybrid query, in one run.

One recall at a time, so each one's CPU can be read: the API's is this process's CPU time
(``time.process_time``: query encoding, intent, planning, ranking; not the web stack), the
engine's is the node's own process CPU from ``/proc`` (so the node must run on this machine and
nothing else may search it meanwhile). Paths, interleaved question by question:

- ``service``: ``Retriever.recall`` with the settings' defaults, a fresh query cache each round
  (every query is encoded, as distinct questions are);
- ``bare hybrid``: what a user would write: sentence-transformers' vector (fp32), one
  ``_msearch`` with a BM25 ``match`` and a kNN query, 40 each, the same tenant filter and routing,
  ``memory_id`` and ``content`` back.

Then the engine side broken down by leg and by phase: the service's own sub-search bodies
(``Retriever.plan``) replayed alone, fetching the stored view (as the service does), recall's
fields from ``_source`` (as before views) or nothing; the query and fetch phase times come from
the node's search statistics (milliseconds the shards spent, per recall).
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

from brain_lab.bench.corpus import Pool
from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.encoders.factory import make_embedder, make_query_embedder
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.engine import queries
from brain_search.retrieval.engine.tenant_stats import counts_request, words_to_weigh
from brain_search.retrieval.pipeline import Retriever

TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")
BARE_K = 40
IDLE_WINDOW_S = 0.01
IDLE_CPU_S = 0.0005
"""this process counts as idle when it burns under 0.5 ms of CPU in a 10 ms window (5 %)"""
IDLE_CAP_S = 2.0
MAX_QUERY = 2000


def node_pids(client: OpenSearch) -> list[int]:
    """The node processes behind ``client`` (their CPU is read from this machine's /proc)."""
    info = client.nodes.info(metric="process")
    return [int(n["process"]["id"]) for n in info["nodes"].values()]


def node_cpu_ms(pids: Sequence[int]) -> float:
    """utime + stime of the node processes, ms."""
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) * TICK_MS
    return total


def search_phases_ms(client: OpenSearch) -> tuple[float, float]:
    """The node's summed query and fetch phase times, ms (shard-level search statistics)."""
    stats = client.nodes.stats(metric="indices", index_metric="search")
    q = f = 0.0
    for n in stats["nodes"].values():
        s = n["indices"]["search"]
        q += float(s["query_time_in_millis"])
        f += float(s["fetch_time_in_millis"])
    return q, f


@dataclass
class PathCost:
    """Per-recall sums of one path; ``n`` recalls measured."""

    label: str
    n: int = 0
    engine_ms: float = 0.0
    api_ms: float = 0.0
    query_ms: float = 0.0
    fetch_ms: float = 0.0
    wall_ms: float = 0.0
    samples: list[float] = field(default_factory=list)

    def per_recall(self) -> dict[str, float]:
        n = max(self.n, 1)
        return {
            "engine_cpu_ms": self.engine_ms / n,
            "api_cpu_ms": self.api_ms / n,
            "total_cpu_ms": (self.engine_ms + self.api_ms) / n,
            "query_phase_ms": self.query_ms / n,
            "fetch_phase_ms": self.fetch_ms / n,
            "wall_ms": self.wall_ms / n,
        }


def until_idle(
    cpu: Callable[[], float] = time.process_time,
    sleep: Callable[[float], None] = time.sleep,
    window_s: float = IDLE_WINDOW_S,
    idle_cpu_s: float = IDLE_CPU_S,
    cap_s: float = IDLE_CAP_S,
) -> float:
    """Wait until this process is idle (under ``idle_cpu_s`` of CPU in a ``window_s`` window, at
    most ``cap_s``); returns the process CPU then, seconds.

    onnxruntime's pool threads spin after a run: the bare hybrid's encoder (sentence-transformers
    with onnxruntime's default threads, one per core) keeps burning CPU for tens of milliseconds
    after its call returns. A fixed 30 ms pause let that spin land in the next call's process CPU:
    the service's API CPU read 17.6–18.9 ms per recall with it and 9.7–12.0 ms after a 0.3 s pause,
    same questions, same run (2026-12-05)."""
    waited = 0.0
    before = cpu()
    while waited < cap_s:
        sleep(window_s)
        waited += window_s
        now = cpu()
        if now - before < idle_cpu_s:
            return now
        before = now
    return cpu()


class Meter:
    """Reads the node's CPU, its phase times and this process's CPU around one call.

    A call is charged all the process CPU it causes: from its start until the process is idle
    again (``until_idle``), so a path's spinning threads count for that path and never for the
    next one measured."""

    def __init__(self, client: OpenSearch) -> None:
        self.client = client
        self.pids = node_pids(client)

    def measure(self, cost: PathCost, call: Callable[[], Any], phases: bool = True) -> Any:
        until_idle()
        q0, f0 = search_phases_ms(self.client) if phases else (0.0, 0.0)
        e0, c0, t0 = node_cpu_ms(self.pids), time.process_time(), time.perf_counter()
        out = call()
        t1, e1 = time.perf_counter(), node_cpu_ms(self.pids)
        c1 = until_idle()  # the call's threads done spinning (the wait's own sleeps cost ~nothing)
        if phases:  # read after the CPU: the stats call's own CPU is not the recall's
            q1, f1 = search_phases_ms(self.client)
            cost.query_ms += q1 - q0
            cost.fetch_ms += f1 - f0
        cost.n += 1
        cost.engine_ms += e1 - e0
        cost.api_ms += (c1 - c0) * 1000.0
        cost.wall_ms += (t1 - t0) * 1000.0
        cost.samples.append(e1 - e0)
        return out


def questions(pool: Pool, n: int, seed: int = 11) -> list[tuple[str, str]]:
    """``n`` distinct (tenant, question) pairs, drawn across the pool's tenants in proportion to
    the questions each has (fixed seed)."""
    pairs = sorted({(t, q[:MAX_QUERY]) for t, qs in pool.queries.items() if t in pool.tenants for q in qs})
    random.Random(seed).shuffle(pairs)
    return pairs[:n]


def bare_hybrid_payload(vector: Sequence[float], text: str, tenant: str, k: int = BARE_K) -> str:
    """A user's own hybrid: BM25 ``match`` on the English field and a filtered kNN, ``k`` each,
    routed to the tenant, ``memory_id`` and ``content`` back, in one ``_msearch``."""
    tenant_filter = [{"term": {"tenant_id": tenant}}]
    head = orjson.dumps({"routing": tenant})
    fields = ["memory_id", "content"]
    bm25 = {
        "size": k,
        "_source": fields,
        "query": {"bool": {"must": [{"match": {queries.LEXICAL_FIELD: text}}], "filter": tenant_filter}},
    }
    knn = {"size": k, "_source": fields, "query": queries.knn_query(vector, k, tenant_filter)}
    return b"".join(head + b"\n" + orjson.dumps(b) + b"\n" for b in (bm25, knn)).decode()


def _checked(resp: dict[str, Any]) -> dict[str, Any]:
    for r in resp["responses"]:
        if "error" in r:
            raise RuntimeError(f"a sub-search failed: {str(r['error'])[:300]}")
    return resp


def _with_source(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` fetching recall's fields from ``_source`` (as before views), not the view."""
    out = {k: v for k, v in body.items() if k not in ("stored_fields", "docvalue_fields")}
    return {**out, "_source": queries.RESULT_FIELDS}


def _nothing_fetched(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` fetching no field but the default ``_id`` (a stored field: the engine decompresses
    the hit's stored record, ``_source`` and its vector included), scores and the cosine."""
    out = {k: v for k, v in body.items() if k not in ("stored_fields", "docvalue_fields")}
    return {**out, "_source": False}


def _unnamed(node: Any) -> Any:
    """``node`` without its clauses' ``_name`` (no ``matched_queries`` for the fetch phase to work out)."""
    if isinstance(node, dict):
        return {k: _unnamed(v) for k, v in node.items() if k != "_name"}
    if isinstance(node, list):
        return [_unnamed(v) for v in node]
    return node


def _no_cosine(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the per-hit cosine script field."""
    return {k: v for k, v in body.items() if k != "script_fields"}


@dataclass
class CpuReport:
    corpus: str
    documents: int
    segments: int
    n: int
    rounds: int
    load_avg: str
    paths: dict[str, dict[str, float]]
    engine_parts: dict[str, dict[str, float]]


def run_cpu(
    client: OpenSearch,
    settings: Settings,
    pool: Pool,
    n: int,
    rounds: int = 2,
    log: Callable[[str], None] = print,
) -> CpuReport:
    """The figure: every path over the same ``n`` questions, ``rounds`` times, after an unmeasured
    pass that compiles scripts, counts the tenants' words and warms the node's caches."""
    qs = questions(pool, n)
    query_embedder = make_query_embedder(settings)
    bare_embedder: Embedder = make_embedder(settings)
    service = {"service": Retriever(client, settings, QueryCache(query_embedder, 8192))}
    alias = settings.memories_alias

    def recall(r: Retriever, tenant: str, text: str) -> Any:
        return r.recall(tenant, RecallRequest(query=text, limit=10))

    def bare(tenant: str, text: str) -> Any:
        vec = bare_embedder.encode([text])[0]
        return _checked(client.msearch(body=bare_hybrid_payload(vec.tolist(), text, tenant), index=alias))

    def engine(payload: str) -> Any:
        return _checked(client.msearch(body=payload, index=alias))

    log(f"warm-up: {len(qs)} questions through every path")
    for tenant, text in qs:
        for r in service.values():
            recall(r, tenant, text)
        bare(tenant, text)
    meter = Meter(client)
    costs = {label: PathCost(label) for label in [*service, "bare hybrid"]}
    for rnd in range(rounds):
        for r in service.values():  # a fresh query cache: every question is encoded, as distinct ones are
            r.encoder = QueryCache(query_embedder, 8192)
        for i, (tenant, text) in enumerate(qs, 1):
            for label, r in service.items():
                meter.measure(costs[label], partial(recall, r, tenant, text))
            meter.measure(costs["bare hybrid"], partial(bare, tenant, text))
            if i % 100 == 0:
                log(f"round {rnd + 1}: {i}/{len(qs)}")
    # the engine side by leg: the service's own bodies replayed alone (no API work in them)
    parts: dict[str, PathCost] = {}
    planner = service["service"]
    for tenant, text in qs:
        req = RecallRequest(query=text, limit=10)
        legs_plan = planner.plan(tenant, req)
        bodies: dict[str, list[dict[str, Any]]] = {
            "BM25 leg (view)": [legs_plan.bodies[0]] if legs_plan.has_lexical else [],
            "BM25 leg, _source fields": [_with_source(legs_plan.bodies[0])] if legs_plan.has_lexical else [],
            "kNN leg (view)": [legs_plan.bodies[-2]],
            "kNN leg, _source fields": [_with_source(legs_plan.bodies[-2])],
            "two legs, _id only (a stored field)": [_nothing_fetched(b) for b in legs_plan.bodies[:-1]],
            "two legs + superseders (the service)": legs_plan.bodies,
            "two legs + superseders, _source fields (before)": [
                *[_with_source(b) for b in legs_plan.bodies[:-1]],
                {**legs_plan.bodies[-1], "_source": ["memory_id", "supersedes"], "docvalue_fields": []},
            ],
            "superseders alone": [legs_plan.bodies[-1]],
            "two legs + superseders, no named clauses": [_unnamed(b) for b in legs_plan.bodies],
            "two legs + superseders, no cosine script field": [_no_cosine(b) for b in legs_plan.bodies],
        }
        words = words_to_weigh(legs_plan.terms, legs_plan.intent.phrases) if legs_plan.has_lexical else []
        if words:
            counts_body = queries.counts_body(legs_plan.scope, words)
            bodies["two legs + superseders + counts (a sub-search)"] = [*legs_plan.bodies, counts_body]
            in_leg = {"global": {}, "aggs": {"tenant": {"filter": counts_body["query"], "aggs": counts_body["aggs"]}}}
            bodies["two legs + superseders, counts as the BM25 leg's aggregations"] = [
                {**legs_plan.bodies[0], "aggs": {"counts": in_leg}},
                *legs_plan.bodies[1:],
            ]
        counts = counts_request(legs_plan.scope, words)
        for label, bs in [*bodies.items(), ("the tenant's counts (ride in every recall)", None)]:
            if bs is None:
                payload = counts
            elif not bs:
                continue
            else:
                payload = planner.msearch_payload(legs_plan.scope, bs)
            meter.measure(parts.setdefault(label, PathCost(label)), partial(engine, payload))
    stats = client.indices.stats(index=alias, metric="docs,segments")
    prim = next(iter(stats["indices"].values()))["primaries"]
    return CpuReport(
        corpus=alias,
        documents=int(prim["docs"]["count"]),
        segments=int(prim["segments"]["count"]),
        n=len(qs),
        rounds=rounds,
        load_avg="/".join(f"{x:.2f}" for x in os.getloadavg()),
        paths={k: v.per_recall() for k, v in costs.items()},
        engine_parts={k: v.per_recall() for k, v in parts.items()},
    )


def ratios(report: CpuReport, baseline: str = "bare hybrid") -> dict[str, dict[str, float]]:
    """Each path's engine CPU and API + engine CPU as a ratio to ``baseline``'s, same run."""
    base = report.paths[baseline]
    out = {}
    for label, p in report.paths.items():
        out[label] = {
            "engine_cpu": p["engine_cpu_ms"] / max(base["engine_cpu_ms"], 1e-9),
            "total_cpu": p["total_cpu_ms"] / max(base["total_cpu_ms"], 1e-9),
        }
    return out
