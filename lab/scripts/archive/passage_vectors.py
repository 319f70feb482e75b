"""Does a memory's semantic score gain from vectors of all its passages (not only the first 256
word pieces the model reads)? kNN alone, exact cosine, on one split of each dataset.

Each memory longer than ``--size`` characters is cut with ``brain_search.ingest.chunking`` and
every piece is encoded; a memory scores ``first`` (its whole text as one vector: what the index
holds today), ``max`` (its best piece, or its own vector) or ``mean`` (the normalised mean of its
pieces). A query sees its pool only (RealMem: the sessions before its own).

    BRAIN_DATA_DIR=../shared/data PYTHONPATH=.:lab .venv/bin/python lab/scripts/passage_vectors.py --split dev
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
from brain_lab.eval.datasets import load_locomo, load_scifact
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.realmem import load_realmem

from brain_search.config import Settings
from brain_search.encoders.factory import make_embedder
from brain_search.ingest.chunking import chunk_text


def metrics(ranked: list[str], relevant: dict[str, int], k: int = 10) -> tuple[float, float, float]:
    top = ranked[:k]
    rel = {m for m, g in relevant.items() if g > 0}
    recall = len(rel & set(top)) / len(rel) if rel else 0.0
    dcg = sum(1 / math.log2(i + 2) for i, m in enumerate(top) if m in rel)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(rel), k)))
    mrr = next((1 / (i + 1) for i, m in enumerate(top) if m in rel), 0.0)
    return recall, dcg / idcg if idcg else 0.0, mrr


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    ap.add_argument("--datasets", default="realmem,scifact,locomo")
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--overlap", type=int, default=200)
    ap.add_argument("--out", default="out/passage_vectors.json")
    args = ap.parse_args()
    settings = Settings()
    root = Path(os.environ["BRAIN_DATA_DIR"])
    emb = CachedEmbedder(
        settings.cache_dir / "embeddings",
        settings.embedding_model,
        settings.embedding_dimension,
        lambda: make_embedder(settings),
    )
    loaders = {"realmem": load_realmem, "scifact": load_scifact, "locomo": load_locomo}
    report: dict[str, dict[str, list[float]]] = {}
    for name in args.datasets.split(","):
        ds = loaders[name](root, args.split)
        k = 100 if name == "scifact" else 10
        out: dict[str, list[float]] = {}
        for tenant, mems in ds.memories.items():
            ids = [m.memory_id for m in mems]
            whole = emb.encode([m.content for m in mems])
            pieces = [
                chunk_text(m.content, args.size, args.overlap) if len(m.content) > args.size else [] for m in mems
            ]
            flat = [p for ps in pieces for p in ps]
            pv = emb.encode(flat) if flat else np.zeros((0, whole.shape[1]), np.float32)
            print(f"{name} {tenant}: {len(mems)} memories, {len(flat)} pieces", file=sys.stderr, flush=True)
            owner = np.array([i for i, ps in enumerate(pieces) for _ in ps], dtype=np.int64)
            mean = whole.copy()
            for i, ps in enumerate(pieces):
                if ps:
                    v = pv[owner == i].mean(axis=0)
                    mean[i] = v / np.linalg.norm(v)
            times = [m.timestamp for m in mems]
            for q in (q for q in ds.queries if q.tenant_id == tenant):
                qv = emb.encode([q.text])[0]
                pool = np.array([q.until is None or (t is not None and t <= q.until) for t in times])
                s_first = whole @ qv
                s_max = s_first.copy()
                if len(flat):
                    ps = pv @ qv
                    np.maximum.at(s_max, owner, ps)
                s_mean = mean @ qv
                for label, s in (("first", s_first), ("max", s_max), ("mean", s_mean)):
                    s = np.where(pool, s, -np.inf)
                    order = np.argsort(-s, kind="stable")[:k]
                    r, n, m = metrics([ids[i] for i in order], q.relevant, 10)
                    rk, _, _ = metrics([ids[i] for i in order], q.relevant, k)
                    out.setdefault(label, []).append((r, n, m, rk))
        report[name] = {}
        for label, rows in out.items():
            a = np.array(rows).mean(axis=0)
            report[name][label] = [round(float(x), 4) for x in a]
            print(
                f"{name} {args.split} {label}: R@10 {a[0]:.3f} nDCG@10 {a[1]:.3f} MRR@10 {a[2]:.3f}"
                f" R@{k} {a[3]:.3f} (n={len(rows)})",
                flush=True,
            )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
