"""Recall by time in words on LoCoMo (issue 25): each question asked with the reference time of
its conversation's last session, once reading its time words ("in July 2022", "last week") as
since/until and once not. R@10 per question category, with 95 % bootstrap intervals, and the
paired difference; dev is where choices were made, test is the held-out report.

    PYTHONPATH=. .venv/bin/python lab/scripts/time_words.py [--split dev,test] [--json lab/reports/eval/time_words.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.datasets import ADVERSARIAL
from brain_lab.eval.metrics import paired_interval, recall_at_k
from brain_lab.eval.runner import EvalOptions, EvalRunner

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client


def mean_interval(values: list[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    idx = np.random.default_rng(seed).integers(0, len(v), size=(resamples, len(v)))
    lo, hi = np.percentile(v[idx].mean(axis=1), [2.5, 97.5])
    return round(float(lo), 3), round(float(hi), 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev,test")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    settings = load_settings(index_prefix="bt-evalrun")
    client = make_client(settings)
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=("locomo",)), log=print)
    out: dict[str, object] = {}
    for split in a.split.split(","):
        ds = runner.split_of("locomo", split)  # type: ignore[arg-type]
        retriever = Retriever(client, runner.indexed["locomo"].settings, QueryCache(runner.embedder, 8192))
        queries = [q for q in ds.queries if q.category != ADVERSARIAL]
        runner.embedder.encode([q.text for q in queries])
        t0 = time.time()
        rows = []
        for q in queries:
            ref = ds.reference_times.get(q.tenant_id)
            scores = {}
            for read in (True, False):
                req = RecallRequest(query=q.text, limit=10, reference_time=ref, time_words=read)
                resp = retriever.recall(q.tenant_id, req)
                scores[read] = recall_at_k([r.id for r in resp.results], q.relevant, 10)
                if read:
                    scoped = resp.query_analysis.time_range is not None
            rows.append({"category": q.category, "with": scores[True], "without": scores[False], "scoped": scoped})
        table: dict[str, object] = {}
        for cat in [
            "temporal",
            "multi-hop",
            "open-domain",
            "single-hop",
            "all (cats 1-4)",
            "temporal, time words read",
        ]:
            if cat == "all (cats 1-4)":
                sel = rows
            elif cat == "temporal, time words read":
                sel = [r for r in rows if r["category"] == "temporal" and r["scoped"]]
            else:
                sel = [r for r in rows if r["category"] == cat]
            if not sel:
                continue
            w = [float(r["with"]) for r in sel]
            wo = [float(r["without"]) for r in sel]
            table[cat] = {
                "n": len(sel),
                "scoped": sum(1 for r in sel if r["scoped"]),
                "R@10 with": round(float(np.mean(w)), 3),
                "R@10 with 95%": mean_interval(w),
                "R@10 without": round(float(np.mean(wo)), 3),
                "R@10 without 95%": mean_interval(wo),
                "difference 95%": tuple(round(x, 3) for x in paired_interval(w, wo)),
            }
            t = table[cat]
            print(
                f"{split} {cat:28s} n={t['n']:4d} scoped={t['scoped']:3d}  with {t['R@10 with']:.3f} "  # type: ignore[index]
                f"{t['R@10 with 95%']}  without {t['R@10 without']:.3f} {t['R@10 without 95%']}  "  # type: ignore[index]
                f"diff {t['difference 95%']}"  # type: ignore[index]
            )
        print(f"{split}: {len(queries)} questions × 2 in {time.time() - t0:.0f} s")
        out[split] = table
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":
    main()
