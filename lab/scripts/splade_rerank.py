"""Does SPLADE-tiny's gain survive the product's ranking? (issue 68; ``splade_screen.py`` measured it
against plain min-max.) Each question's candidates as the recall collects them (``category_screen.py
--collect-split``: the kNN and BM25 sub-searches, the features the pipeline scores), ranked by the
shipped ranking (``brain``) and by ``(1 − w) · minmax(brain) + w · minmax(SPLADE)`` over the same
candidates, per dataset, with paired intervals against ``brain``. SPLADE here can only re-order
what the two sub-searches found; a sparse sub-search of its own would also bring candidates.

    BRAIN_EMBEDDING_MODEL=all-MiniLM-L6-v2 PYTHONPATH=.:lab .venv/bin/python lab/scripts/splade_rerank.py \\
        --candidates out/fit-minilm/<split>-candidates.jsonl --split <split> --model out/splade/cognition/model \\
        [--weights 0.1,0.2,0.3] [--json out/splade-rerank-<split>.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from brain_lab.eval import fit
from brain_lab.eval.datasets import Dataset, load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.metrics import mean, ndcg_at_k, paired_interval, recall_at_k, reciprocal_rank
from brain_lab.eval.realmem import load_realmem
from category_screen import METRICS, by_params, intents_for, variants
from splade_screen import Splade, allowed, minmax

from brain_search.config import load_settings


def scores_of(order: list[int], ids: list[str], relevant: dict[str, int]) -> dict[str, float]:
    ranked = [ids[i] for i in order[:10]]
    return {
        "R@10": recall_at_k(ranked, relevant, 10),
        "nDCG@10": ndcg_at_k(ranked, relevant, 10),
        "MRR@10": reciprocal_rank(ranked, relevant, 10),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--candidates", type=Path, required=True)
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--weights", default="0.1,0.2,0.3")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    settings = load_settings()
    data = resolve_data_dir(settings)
    queries = fit.load(args.candidates)
    intents = intents_for(queries, settings, args.candidates.with_suffix(".intents.pkl"))
    brain = by_params(variants(settings.embedding_model)["brain"])
    sets: dict[str, Dataset] = {
        "locomo": load_locomo(data, args.split),  # type: ignore[arg-type]
        "scifact": load_scifact(data, args.split),  # type: ignore[arg-type]
        "realmem": load_realmem(data, split=args.split),  # type: ignore[arg-type]
    }
    splade = Splade(args.model, cache=Path("out/splade-cache"))
    asked = {(name, q.query_id): q for name, ds in sets.items() for q in ds.queries}
    pools = {(name, tenant): mems for name, ds in sets.items() for tenant, mems in ds.memories.items()}
    # each pool encoded as splade_screen.py encodes it (its cache), then looked up by memory id
    rows: dict[tuple[str, str], dict[str, int]] = {}
    vectors: dict[tuple[str, str], object] = {}
    for name, ds in sets.items():
        for tenant, mems in ds.memories.items():
            vectors[(name, tenant)] = splade.encode([m.content for m in mems])
            rows[(name, tenant)] = {m.memory_id: i for i, m in enumerate(mems)}
    qv = splade.encode([q.text for q in queries])
    weights = [float(w) for w in args.weights.split(",") if w]
    got: dict[str, dict[str, list[dict[str, float]]]] = {}
    cover: dict[str, list[tuple[float, float]]] = {}
    for qi, q in enumerate(queries):
        key = (q.dataset, asked[(q.dataset, q.query_id)].tenant_id)
        ids = list(q.features.ids)
        rel = np.asarray(brain(q, intents[q.text]), dtype=np.float64)
        m = vectors[key]
        idx = [rows[key][i] for i in ids]
        sparse = np.asarray((m[idx] @ qv[qi].T).todense()).ravel()  # type: ignore[index]
        per = got.setdefault(q.dataset, {})
        # how many of the relevant memories the candidates hold, and with SPLADE's own top 20 added
        # (what a sparse sub-search would bring; the pool as the question's date allows)
        usable = allowed(asked[(q.dataset, q.query_id)], pools[key])
        whole = np.asarray((m[usable] @ qv[qi].T).todense()).ravel()  # type: ignore[index]
        top = {pools[key][usable[j]].memory_id for j in np.argsort(-whole, kind="stable")[:20]}
        wanted = set(q.relevant)
        cover.setdefault(q.dataset, []).append(
            (len(wanted & set(ids)) / max(1, len(wanted)), len(wanted & (set(ids) | top)) / max(1, len(wanted)))
        )
        base = sorted(range(len(ids)), key=lambda i: (-rel[i], q.order_keys[i]))
        per.setdefault("brain", []).append(scores_of(base, ids, q.relevant))
        for w in weights:
            fused = (1 - w) * minmax(rel) + w * minmax(sparse)
            order = sorted(range(len(ids)), key=lambda i: (-fused[i], q.order_keys[i]))
            per.setdefault(f"brain+splade {w}", []).append(scores_of(order, ids, q.relevant))
    out: dict[str, object] = {}
    for ds_name, per in got.items():
        print(f"\n{ds_name} {args.split} (n={len(per['brain'])})")
        table: dict[str, object] = {}
        for variant, vals in per.items():
            cells, row = [], {}
            for metric in METRICS:
                v = [x[metric] for x in vals]
                ref = [x[metric] for x in per["brain"]]
                lo, hi = paired_interval(v, ref)
                row[metric] = {"mean": mean(v), "delta": mean(v) - mean(ref), "interval": [lo, hi]}
                cells.append(f"{mean(v):.3f} ({mean(v) - mean(ref):+.3f} [{lo:+.3f}, {hi:+.3f}])")
            table[variant] = row
            print(f"  {variant:<18}" + "  ".join(cells), flush=True)
        c = np.asarray(cover[ds_name])
        print(f"  relevant among the candidates {c[:, 0].mean():.3f}; with SPLADE's top 20 added {c[:, 1].mean():.3f}")
        table["coverage"] = {"candidates": float(c[:, 0].mean()), "with_splade_top20": float(c[:, 1].mean())}
        out[ds_name] = table
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"encoder": settings.embedding_model, "split": args.split, "figures": out}))


if __name__ == "__main__":
    main()
