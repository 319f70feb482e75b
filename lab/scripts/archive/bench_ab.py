"""Paired before/after of the recall pipeline: several versions of `retrieval/pipeline.py` (and its
`queries.py`) taken from git revisions, run in ONE process over the same corpus, each query sent
to every version in random order, so all versions see the same queries at the same moment and
the machine's noise hits them alike.

    .venv/bin/python lab/scripts/archive/bench_ab.py --size 10k --n 150 6fadc63 WORKTREE

Prints per version: total / search p50 and p95 (ms) and this process's CPU per recall
(response serialised). Revisions older than `Retriever.plan` (6fadc63) are not supported.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import numpy as np
from brain_lab.bench.corpus import cached_embedder, corpus_settings, load_pool, parse_size
from brain_lab.bench.load import CachedVectors
from brain_lab.bench.workload import build_workload, parse_mix

from brain_search.config import load_settings
from brain_search.graph.store import GraphStore
from brain_search.models import RecallRequest
from brain_search.store.client import make_client

REPO = Path(__file__).resolve().parents[3]
FILES = ("brain_search/retrieval/pipeline.py", "brain_search/retrieval/engine/queries.py")


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def pipeline_at(rev: str, tag: str, tmp: Path) -> ModuleType:
    """The pipeline module of a revision (``WORKTREE`` = the files on disk), with its own queries."""
    texts = []
    for f in FILES:
        if rev == "WORKTREE":
            texts.append((REPO / f).read_text())
        else:
            texts.append(
                subprocess.run(
                    ["git", "show", f"{rev}:{f}"], cwd=REPO, check=True, capture_output=True, text=True
                ).stdout
            )
    (tmp / f"queries_{tag}.py").write_text(texts[1])
    _load(f"queries_{tag}", tmp / f"queries_{tag}.py")
    pipeline = texts[0].replace("from brain_search.retrieval.engine import queries", f"import queries_{tag} as queries")
    (tmp / f"pipeline_{tag}.py").write_text(pipeline)
    return _load(f"pipeline_{tag}", tmp / f"pipeline_{tag}.py")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("revs", nargs="+", help="git revisions, WORKTREE for the files on disk")
    ap.add_argument("--size", default="10k")
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--mix", default="auto=50,focus=15,z_value=10,tiered=10,nodes=15")
    args = ap.parse_args()

    s = corpus_settings(load_settings(), parse_size(args.size))
    emb = cached_embedder(s)
    items = build_workload(load_pool(s, emb), args.n, parse_mix(args.mix), with_writes=False).recalls()
    texts = sorted({it.body["query"] for it in items})
    vectors = CachedVectors(dict(zip(texts, emb.encode(texts), strict=True)))
    client = make_client(s)
    graph = GraphStore(client, s)
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        retrievers = {
            rev: pipeline_at(rev, f"v{i}", Path(tmp)).Retriever(client, s, vectors, graph)
            for i, rev in enumerate(args.revs)
        }
        for it in items[:10]:  # warm-up
            for r in retrievers.values():
                r.recall(it.tenant, RecallRequest(**it.body))
        res: dict[str, dict[str, list[float]]] = {rev: {"total": [], "search": [], "cpu": []} for rev in retrievers}
        for it in items:
            order = list(retrievers.items())
            random.shuffle(order)
            for rev, r in order:
                c0 = time.process_time()
                out = r.recall(it.tenant, RecallRequest(**it.body))
                out.model_dump_json()
                res[rev]["cpu"].append((time.process_time() - c0) * 1000)
                res[rev]["total"].append(out.timings.total_ms)
                res[rev]["search"].append(out.timings.search_ms)
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{len(items)} recalls per version over {s.memories_alias}, interleaved; load avg {load}")
    for rev, d in res.items():
        p = {k: (np.percentile(v, 50), np.percentile(v, 95)) for k, v in d.items()}
        print(
            f"{rev:>12}: total p50 {p['total'][0]:6.1f} p95 {p['total'][1]:6.1f} | search p50 {p['search'][0]:5.1f}"
            f" | CPU/recall {np.mean(d['cpu']):.2f} ms"
        )


if __name__ == "__main__":
    main()
