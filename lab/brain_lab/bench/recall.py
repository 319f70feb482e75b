"""The recall figure: per-stage timings of ``Retriever.recall`` in-process, and over HTTP.

In-process, a cold pass (every query encoded by the model: the query cache is fresh) is followed
by a warm pass over the same queries (vectors from the LRU), so the embedding cost and the rest
are both visible. Over HTTP the client's wall time is next to the server's own stage timings.
All times in ms.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx
from brain_search_client import BrainClient
from opensearchpy import OpenSearch

from brain_lab.bench.stats import percentiles
from brain_lab.bench.workload import Item
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever

STAGES = ("intent_ms", "embed_ms", "plan_ms", "search_ms", "rank_ms", "tiers_ms", "total_ms")


@dataclass
class StageTimes:
    label: str
    stages: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STAGES})
    wall: list[float] = field(default_factory=list)

    def add(self, timings: dict[str, float], wall_ms: float) -> None:
        for s in STAGES:
            self.stages[s].append(float(timings.get(s, 0.0)))
        self.wall.append(wall_ms)

    def summary(self) -> dict[str, dict[str, float]]:
        out = {s: percentiles(v) for s, v in self.stages.items()}
        out["wall_ms"] = percentiles(self.wall)
        return out


def in_process(retriever: Retriever, items: Sequence[Item], label: str) -> StageTimes:
    st = StageTimes(label)
    for it in items:
        req = RecallRequest(**it.body)
        t0 = time.perf_counter()
        resp = retriever.recall(it.tenant, req)
        st.add(resp.timings.model_dump(), (time.perf_counter() - t0) * 1000.0)
    return st


def over_http(host: str, keys: dict[str, str], items: Sequence[Item], label: str) -> StageTimes:
    st = StageTimes(label)
    with httpx.Client(timeout=30.0) as http:  # one connection pool, a client per tenant's key
        clients = {tenant: BrainClient(host, api_key=key, http_client=http) for tenant, key in keys.items()}
        for it in items:
            t0 = time.perf_counter()
            resp = clients[it.tenant].recall(RecallRequest(**it.body))
            st.add(resp.timings.model_dump(), (time.perf_counter() - t0) * 1000.0)
    return st


def engine_sequential(client: OpenSearch, index: str, payloads: Sequence[str]) -> list[float]:
    """Wall ms of each ``_msearch`` over ``index`` sent alone (no concurrency): the bare engine's floor."""
    out = []
    for body in payloads:
        t0 = time.perf_counter()
        resp = client.msearch(body=body, index=index)
        out.append((time.perf_counter() - t0) * 1000.0)
        if any("error" in r for r in resp["responses"]):
            raise RuntimeError("an engine sub-search failed")
    return out


def table(rows: Sequence[StageTimes], q: str = "p50") -> list[list[str]]:
    """Rows of ``label``, each of ``STAGES`` and ``wall`` at percentile ``q``."""
    out = []
    for st in rows:
        s = st.summary()
        out.append([st.label, *[f"{s[k][q]:.2f}" for k in (*STAGES, "wall_ms")]])
    return out
