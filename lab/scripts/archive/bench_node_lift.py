"""Recall latency with and without node evidence (``RankingParams.node_lift``), in-process on the
evaluation's LoCoMo index: 300 test questions, both settings interleaved (order alternating), two
rounds. The only difference is the ranking step, so this is what the lift costs a recall.

    PYTHONPATH=. .venv/bin/python lab/scripts/bench_node_lift.py
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from brain_lab.eval.runner import EvalOptions, EvalRunner

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.score.ranking import RankingParams
from brain_search.store.client import make_client


def main() -> None:
    settings = load_settings(index_prefix="bt-evalrun")
    client = make_client(settings)
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=("locomo",)), log=print)
    questions = runner.split_of("locomo", "test").queries[:300]
    runner.embedder.encode([q.text for q in questions])
    base = runner.indexed["locomo"].settings
    shipped = RankingParams()
    variants = {"no lift": replace(shipped, node_lift=0.0), f"lift {shipped.node_lift}": shipped}
    retrievers = {
        name: Retriever(client, base, QueryCache(runner.embedder, 8192), ranking=r) for name, r in variants.items()
    }
    reqs = [(q.tenant_id, RecallRequest(query=q.text, limit=10, tiered=i % 2 == 1)) for i, q in enumerate(questions)]
    for r in retrievers.values():  # warm-up
        for tenant, req in reqs[:30]:
            r.recall(tenant, req)
    total: dict[str, list[float]] = {n: [] for n in retrievers}
    rank: dict[str, list[float]] = {n: [] for n in retrievers}
    names = list(retrievers)
    for rnd in range(2):
        for i, (tenant, req) in enumerate(reqs):
            for n in names if (i + rnd) % 2 == 0 else names[::-1]:
                t0 = time.perf_counter()
                out = retrievers[n].recall(tenant, req)
                total[n].append((time.perf_counter() - t0) * 1000)
                rank[n].append(out.timings.rank_ms)
    for n in names:
        t, r = np.array(total[n]), np.array(rank[n])
        print(
            f"{n:>9}: recall p50 {np.percentile(t, 50):.1f} ms, p95 {np.percentile(t, 95):.1f} ms;"
            f" ranking p50 {np.percentile(r, 50):.2f} ms, p95 {np.percentile(r, 95):.2f} ms (n={len(t)})"
        )
    a, b = (np.array(total[n]) for n in names)
    p50, p95 = (np.percentile(b, q) / np.percentile(a, q) for q in (50, 95))
    print(f"with / without lift: p50 ×{p50:.2f}, p95 ×{p95:.2f}")


if __name__ == "__main__":
    main()
