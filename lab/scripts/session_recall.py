"""Session-level recall on LoCoMo and RealMem (issue 42, item 5): for each question whose evidence
turns have a session, is a right session among the first k that a recall names? Before: the
sessions of the top-10 flat results (first seen first); after: the response's ``conversations``
(``context``). One recall per question gives both (the flat results are the same either way).
Hit@k and session recall@k with 95 % paired-bootstrap intervals of after − before.

    PYTHONPATH=.:lab .venv/bin/python lab/scripts/session_recall.py [--split test] [--prefix bt-evalrun] \
        [--json lab/reports/eval/session_recall.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.datasets import ADVERSARIAL
from brain_lab.eval.metrics import paired_interval
from brain_lab.eval.runner import EvalOptions, EvalRunner
from brain_lab.eval.sessions import (
    hit_at,
    recall_at,
    relevant_sessions,
    session_index,
    sessions_of_conversations,
    sessions_of_results,
)

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client

KS = (1, 3, 5, 10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="test")
    ap.add_argument("--datasets", default="locomo,realmem")
    ap.add_argument("--prefix", default="bt-evalrun", help="the evaluation indices' prefix")
    ap.add_argument("--context", type=int, default=2)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    settings = load_settings(index_prefix=a.prefix)
    client = make_client(settings)
    names = tuple(a.datasets.split(","))
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=names), log=print)
    out: dict[str, object] = {}
    for name in names:
        for split in a.split.split(","):
            ds = runner.split_of(name, split)  # type: ignore[arg-type]
            index = session_index(ds)
            retriever = Retriever(client, runner.indexed[name].settings, QueryCache(runner.embedder, 8192))
            queries = [q for q in ds.queries if q.category != ADVERSARIAL and relevant_sessions(q, index)]
            runner.embedder.encode([q.text for q in queries])
            t0 = time.time()
            before: dict[str, list[float]] = {f"{m}@{k}": [] for m in ("hit", "recall") for k in KS}
            after: dict[str, list[float]] = {key: [] for key in before}
            context_ms: list[float] = []
            for q in queries:
                req = RecallRequest(
                    query=q.text, limit=10, until=q.until, reference_time=q.reference_time, context=a.context
                )
                resp = retriever.recall(q.tenant_id, req)
                rel = relevant_sessions(q, index)
                flat, convs = sessions_of_results(resp, q.tenant_id, index), sessions_of_conversations(resp)
                for k in KS:
                    before[f"hit@{k}"].append(hit_at(flat, rel, k))
                    after[f"hit@{k}"].append(hit_at(convs, rel, k))
                    before[f"recall@{k}"].append(recall_at(flat, rel, k))
                    after[f"recall@{k}"].append(recall_at(convs, rel, k))
                context_ms.append(resp.timings.context_ms)
            p50 = round(float(np.median(context_ms)), 2)
            table: dict[str, Any] = {"questions": len(queries), "context_ms_p50": p50}
            for key in before:
                lo, hi = paired_interval(after[key], before[key])
                b, f = round(float(np.mean(before[key])), 3), round(float(np.mean(after[key])), 3)
                table[key] = {"before": b, "after": f, "after - before 95%": [round(lo, 3), round(hi, 3)]}
                print(f"{name} {split} {key:10s} before {b:.3f}  after {f:.3f}  diff [{lo:+.3f}, {hi:+.3f}]")
            took = time.time() - t0
            print(f"{name} {split}: {len(queries)} questions in {took:.0f} s, context p50 {p50} ms")
            out[f"{name}/{split}"] = table
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":
    main()
