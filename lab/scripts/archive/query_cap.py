"""What the query cap for the encoder (``BRAIN_QUERY_MAX_TOKENS``, ``BRAIN_QUERY_KEEP``; 256 and
``end`` by default) costs in quality: the defaults' recall on a split with each query's *vector*
made from its first or last N word pieces only (``embedding.QueryCut``, as the API's encoder
reads it; the lexical query keeps every word), for each N and side, in one process.

A long question is the API's largest CPU cost under load (lab/reports/performance.md): 256 word
pieces take ~30 ms of one core to encode, 128 about 13 ms. RealMem's questions are the long ones.

    BRAIN_DATA_DIR=../shared/data PYTHONPATH=.:lab .venv/bin/python lab/scripts/archive/query_cap.py \
        --split dev --datasets realmem,locomo,scifact --caps 256,128,96 [--keep end,start]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.brain_systems import Z_AWARE, Z_AWARE_NO_TIME, brain_systems
from brain_lab.eval.retrieval_eval import LIMIT_OF, METRICS_OF, evaluate_systems
from brain_lab.eval.runner import EvalOptions, EvalRunner

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCut
from brain_search.store.client import make_client


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    ap.add_argument("--datasets", default="realmem,locomo,scifact")
    ap.add_argument("--caps", default="256,128,96")
    ap.add_argument("--keep", default="end", help="start,end: which word pieces a cut keeps (each is run)")
    a = ap.parse_args()
    settings = load_settings(index_prefix="bt-evalrun")
    client = make_client(settings)
    names = tuple(a.datasets.split(","))
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=names), log=lambda *_: None)
    for name in names:
        ds = runner.split_of(name, a.split)  # type: ignore[arg-type]
        s = runner.indexed[name].settings
        for cap, keep in ((int(c), k) for c in a.caps.split(",") for k in a.keep.split(",")):
            capped = QueryCut(runner.embedder, settings.models_dir, cap, keep)  # type: ignore[arg-type]
            cut = sum(capped.cut(q.text) != q.text for q in ds.queries)
            systems = {
                x.name: x
                for x in brain_systems(
                    client, s, runner.embedder, query_embedder=capped, reference_times=ds.reference_times
                )
            }
            system = systems.get(Z_AWARE_NO_TIME) or systems[Z_AWARE]
            row = evaluate_systems(ds, [system], METRICS_OF[name], LIMIT_OF[name]).table()[system.name]
            shown = "  ".join(f"{m} {float(v):.4f}" for m, v in row.items())
            print(
                f"{name} {a.split} cap {cap} keep {keep}: {cut} of {len(ds.queries)} queries cut; {shown}", flush=True
            )


if __name__ == "__main__":
    main()
