"""Recall latency with index vs tenant lexical statistics (BRAIN_LEXICAL_STATS), in-process on
the evaluation's LoCoMo index: 300 test questions, both settings interleaved, two rounds.

    PYTHONPATH=. .venv/bin/python lab/scripts/bench_lexical_stats.py
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.runner import EvalOptions, EvalRunner

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client


def main() -> None:
    settings = load_settings(index_prefix="bt-evalrun")
    client = make_client(settings)
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=("locomo",)), log=print)
    questions = runner.split_of("locomo", "test").queries[:300]
    runner.embedder.encode([q.text for q in questions])
    base = runner.indexed["locomo"].settings
    modes = ("index", "tenant")
    retrievers = {
        m: Retriever(client, base.model_copy(update={"lexical_stats": m}), QueryCache(runner.embedder, 8192))
        for m in modes
    }
    for m in modes:  # warm-up
        for q in questions[:30]:
            retrievers[m].recall(q.tenant_id, RecallRequest(query=q.text, limit=10, time_words=False))
    ms: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(2):
        for q in questions:
            for m in modes:
                t0 = time.perf_counter()
                retrievers[m].recall(q.tenant_id, RecallRequest(query=q.text, limit=10, time_words=False))
                ms[m].append((time.perf_counter() - t0) * 1000)
    for m in modes:
        v = sorted(ms[m])
        print(f"{m}: p50 {v[len(v) // 2]:.1f} ms, p95 {v[int(len(v) * 0.95)]:.1f} ms (n={len(v)})")
    ratio = sorted(ms["tenant"])[len(ms["tenant"]) // 2] / sorted(ms["index"])[len(ms["index"]) // 2]
    print(f"tenant / index p50: {ratio:.2f}")


if __name__ == "__main__":
    main()
