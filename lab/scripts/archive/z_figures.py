"""The Z figures (lab/brain_lab/eval/z_eval.py) on LoCoMo, printed: Exact-tier placement and precision,
tier spread, nothing-matched AUROC. Uses the evaluation index (built on first use).

    PYTHONPATH=. .venv/bin/python lab/scripts/archive/z_figures.py --split dev [--phrases 200 --questions 300]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval import z_eval
from brain_lab.eval.runner import EvalOptions, EvalRunner

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest, RecallResponse
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    ap.add_argument("--phrases", type=int, default=200)
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--seed", type=int, default=20260120)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    settings = load_settings(index_prefix="bt-evalrun")
    client = make_client(settings)
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=("locomo",)), log=print)
    ds = runner.split_of("locomo", a.split)
    s = runner.indexed["locomo"].settings
    retriever = Retriever(client, s, QueryCache(runner.embedder, 4096))

    def recall(tenant: str, req: RecallRequest, exclude: Sequence[str]) -> RecallResponse:
        return retriever.recall(tenant, req, exclude=exclude)

    t0 = time.time()
    zq = z_eval.z_phrase_queries(ds.memories, a.phrases, a.seed)
    runner.embedder.encode([q.query for q in zq])
    ex = z_eval.evaluate_exact_tier(zq, recall, a.split)
    print(
        f"exact-tier placement {ex.placement:.3f} {ex.placement_interval()} by form {ex.by_form()} (n={len(ex.placed)})"
    )
    print(f"exact-tier precision {ex.precision:.3f} {ex.precision_interval()} ({ex.literal}/{ex.shown})")
    qs = z_eval.question_sample(ds.queries, a.questions, a.seed)
    runner.embedder.encode([q.text for q in qs])
    sp = z_eval.evaluate_tier_spread(qs, recall, a.split)
    print(
        f"tier spread (n={sp.n_queries}, shown {sp.total}):",
        {k: round(v, 3) for k, v in sp.shares().items()},
        "non-empty:",
        sp.nonempty,
        "nothing matched:",
        sp.nothing_matched,
    )
    nm = z_eval.evaluate_nothing_matched(qs, recall, a.split)
    print(
        f"nothing-matched AUROC {nm.auroc:.3f} {nm.interval()} (n={nm.n}); said nothing: present "
        f"{nm.said_nothing_present}, removed {nm.said_nothing_removed}"
    )
    print(f"{time.time() - t0:.0f} s")
    for m in ex.misses[:12]:
        print("  miss:", m)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(
                {"placement": ex.placement, "precision": ex.precision, "spread": sp.shares(), "auroc": nm.auroc}, fh
            )


if __name__ == "__main__":
    main()
