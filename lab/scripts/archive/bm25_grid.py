"""BM25's k1 and b for the tenant's lexical score, on the dev splits of the three datasets (issue 41's
lever left: "short chat lines may want a smaller b"). For each (k1, b) the defaults' recall (the
"Brain Z-aware, time words off" system of ``brain-search eval``) runs every dev query of LoCoMo,
RealMem and SciFact through ``Retriever.recall`` with ``queries.BM25_K1`` / ``BM25_B`` set in this
process; nothing else changes. The best baselines of the last report's dev rows print beside.
A point ``k1:b`` uses that b for every tenant, ``k1:auto`` the service's rule (``queries.bm25_b``:
b by the tenant's average length).

    BRAIN_DATA_DIR=... PYTHONPATH=.:lab .venv/bin/python lab/scripts/bm25_grid.py \
        [--grid 1.2:auto,1.2:0.75,1.2:0.5,0.9:0.5] [--split dev] [--json out/bm25_grid.json]

The evaluation indices must exist (``brain-search eval`` builds them, prefix ``bt-evalrun``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.brain_systems import Z_AWARE, Z_AWARE_NO_TIME, brain_systems
from brain_lab.eval.fit import REPORT_RESULTS
from brain_lab.eval.retrieval_eval import LIMIT_OF, METRICS_OF, evaluate_systems
from brain_lab.eval.runner import EvalOptions, EvalRunner

from brain_search.config import load_settings
from brain_search.retrieval.engine import queries
from brain_search.store.client import make_client

LONG_B, SHORT_B = queries.BM25_B, queries.BM25_B_SHORT
CONVERSATIONS = ("R@10", "nDCG@10", "MRR@10")
SHOWN = {"locomo": CONVERSATIONS, "realmem": CONVERSATIONS, "scifact": ("nDCG@10", "R@10", "MRR@10")}


def baselines(split: str) -> dict[str, dict[str, float]]:
    """dataset → metric → the best of bare BM25 and min-max in the last report (that split)."""
    if not REPORT_RESULTS.is_file():
        return {}
    out: dict[str, dict[str, float]] = {}
    for r in json.loads(REPORT_RESULTS.read_text()).get("retrieval", []):
        if r.get("split") != split:
            continue
        for system, row in r["main"].items():
            if system.startswith("Brain"):
                continue
            best = out.setdefault(r["dataset"], {})
            for m, v in row.items():
                if isinstance(v, (int, float)):
                    best[m] = max(best.get(m, 0.0), float(v))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", default="1.2:auto,1.2:0.75,1.2:0.5,1.2:0.3,0.9:0.5,1.6:0.5,1.6:0.75")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--datasets", default="locomo,realmem,scifact")
    ap.add_argument("--prefix", default="bt-evalrun")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    # "k1:b" one b for every tenant; "k1:auto" the service's rule (queries.bm25_b)
    grid = [(float(p.split(":")[0]), p.split(":")[1]) for p in a.grid.split(",")]
    settings = load_settings(index_prefix=a.prefix)
    client = make_client(settings)
    names = tuple(a.datasets.split(","))
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=names), log=print)
    refs = baselines(a.split)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in names:
        ds = runner.split_of(name, a.split)  # type: ignore[arg-type]
        runner.embedder.encode([q.text for q in ds.queries])
        s = runner.indexed[name].settings
        for k1, b in grid:
            queries.BM25_K1 = k1
            queries.BM25_B, queries.BM25_B_SHORT = (LONG_B, SHORT_B) if b == "auto" else (float(b), float(b))
            systems = {x.name: x for x in brain_systems(client, s, runner.embedder, reference_times=ds.reference_times)}
            system = systems.get(Z_AWARE_NO_TIME) or systems[Z_AWARE]  # no dates (SciFact): no time words anyway
            t0 = time.time()
            result = evaluate_systems(ds, [system], METRICS_OF[name], LIMIT_OF[name])
            row = {m: round(float(v), 4) for m, v in result.table()[system.name].items()}
            out.setdefault(f"{k1}:{b}", {})[name] = row
            shown = "  ".join(
                f"{m} {row[m]:.3f} ({row[m] - refs.get(name, {}).get(m, float('nan')):+.3f})" for m in SHOWN[name]
            )
            took = time.time() - t0
            print(f"k1 {k1:.2f} b {b}  {name} {a.split} ({len(ds.queries)} q, {took:.0f} s): {shown}", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":
    main()
