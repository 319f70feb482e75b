#!/usr/bin/env python
"""Recall under load with each query encoder, paired (not a test): the real pipeline
(``Retriever.recall`` against the benchmark corpus, one ``_msearch`` per recall) in ONE process,
Poisson arrivals into a 32-thread pool, every query new to the model (a fresh query cache per
slice), the encoders taking turns in short slices in random order so the machine's noise (other
people's load) hits them alike.

    PYTHONPATH=. .venv/bin/python lab/scripts/archive/bench_recall_encoders.py --size 100k --rate 50
    # BRAIN_OPENSEARCH_URL=http://127.0.0.1:9241 for the isolated node of lab/reports/performance.md

Variants: ``st`` = sentence-transformers' ONNX backend, 1 intra-op thread (main before this
change); ``fp32`` / ``int8`` = ``OnnxQueryEmbedder``; ``cached`` = query vectors from the disk
cache (no model: the floor). No HTTP: the API adds ~6 ms at p50 (lab/reports/performance.md). Prints
latency from the arrival time (so queueing counts) p50/p95/p99 and this process's CPU per recall.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from brain_lab.bench.corpus import cached_embedder, corpus_settings, load_pool, parse_size
from brain_lab.bench.load import CachedVectors
from brain_lab.bench.workload import build_workload, parse_mix

from brain_search.config import load_settings
from brain_search.encoders.embedding import Embedder, OnnxQueryEmbedder
from brain_search.encoders.factory import make_embedder
from brain_search.encoders.queries import QueryCache
from brain_search.graph.store import GraphStore
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.cache_budget import cache_budgets
from brain_search.store.client import make_client


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100k")
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--slice", type=float, default=6.0, help="seconds per variant per round")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--users", type=int, default=32)
    ap.add_argument("--variants", default="st,fp32,int8,cached")
    ap.add_argument("--mix", default="auto=50,focus=15,z_value=10,tiered=10,nodes=15")
    args = ap.parse_args()

    s = corpus_settings(load_settings(), parse_size(args.size))
    emb = cached_embedder(s)
    n = int(args.rate * args.slice * 1.5) * args.rounds * 4
    items = build_workload(load_pool(s, emb), n, parse_mix(args.mix), with_writes=False).recalls()
    texts = sorted({it.body["query"] for it in items})
    cached = CachedVectors(dict(zip(texts, emb.encode(texts), strict=True)))
    client = make_client(s)
    graph = GraphStore(client, s)
    encoders: dict[str, Embedder] = {
        "st": make_embedder(s, 1),
        "fp32": OnnxQueryEmbedder(s.models_dir, intra_op_threads=1),
        "int8": OnnxQueryEmbedder(s.models_dir, intra_op_threads=1, quantized=True),
    }
    variants = [v.strip() for v in args.variants.split(",")]
    warm = Retriever(client, s, cached, graph)
    for it in items[:50]:  # engine caches warm, connections open
        warm.recall(it.tenant, RecallRequest(**it.body))
    for e in encoders.values():
        e.encode(["warm up"])

    pool = ThreadPoolExecutor(args.users)
    res: dict[str, dict[str, list[float]]] = {v: {"lat": [], "cpu": []} for v in variants}
    loads = []
    cursor = 50
    for _ in range(args.rounds):
        for v in random.sample(variants, len(variants)):
            vectors = cached if v == "cached" else QueryCache(encoders[v], cache_budgets(s).query_vectors)
            retriever = Retriever(client, s, vectors, graph)
            lat: list[float] = []

            def one(body: dict, tenant: str, due: float, r: Retriever = retriever, out: list[float] = lat) -> None:
                r.recall(tenant, RecallRequest(**body)).model_dump_json()
                out.append((time.perf_counter() - due) * 1000)

            futures = []
            c0 = time.process_time()
            t0 = due = time.perf_counter()
            while due - t0 < args.slice:
                due += random.expovariate(args.rate)
                pause = due - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
                it = items[cursor % len(items)]
                cursor += 1
                futures.append(pool.submit(one, it.body, it.tenant, due))
            for f in futures:
                f.result()
            res[v]["cpu"].append((time.process_time() - c0) * 1000 / len(lat))
            res[v]["lat"].extend(lat)
            loads.append(os.getloadavg()[0])
    print(
        f"{args.rounds} rounds × {args.slice:g} s per variant at {args.rate:g}/s over {s.memories_alias}, "
        f"{args.users} threads; load avg (1 min) {min(loads):.1f}–{max(loads):.1f}"
    )
    base = np.percentile(res[variants[0]]["lat"], 95)
    print("| variant | recalls | p50 ms | p95 ms | p99 ms | CPU ms/recall | p95 ÷ " + variants[0] + " |")
    print("|---|---|---|---|---|---|---|")
    for v, d in res.items():
        p = np.percentile(d["lat"], [50, 95, 99])
        print(
            f"| {v} | {len(d['lat'])} | {p[0]:.1f} | {p[1]:.1f} | {p[2]:.1f} "
            f"| {np.mean(d['cpu']):.2f} | {p[1] / base:.2f} |"
        )


if __name__ == "__main__":
    main()
