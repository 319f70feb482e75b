"""bge-small-en-v1.5's query instruction, screened on dense retrieval alone (issue 68): each
question encoded as it is (what the service does) and with BAAI's instruction for short queries
to passages ("Represent this sentence for searching relevant passages: "), against the same
passage vectors (the evaluation's cache), each question over its own pool (LoCoMo: its
conversation; RealMem: the sessions before its own; SciFact: the corpus); R@10 and nDCG@10 with
the 95 % paired-bootstrap interval of with − without.

    PYTHONPATH=.:lab .venv/bin/python lab/scripts/bge_instruction.py --split dev [--datasets realmem,locomo,scifact]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.datasets import ADVERSARIAL, Dataset, load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.metrics import mean, ndcg_at_k, paired_interval, recall_at_k
from brain_lab.eval.realmem import load_realmem
from brain_lab.eval.runner import eval_embedder

from brain_search.config import load_settings
from brain_search.encoders.base import BGE_SMALL

INSTRUCTION = "Represent this sentence for searching relevant passages: "


def scores(ds: Dataset, passages: CachedEmbedder, prefix: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"R@10": [], "nDCG@10": []}
    queries = [q for q in ds.queries if q.category != ADVERSARIAL]
    qv = passages.encode([prefix + q.text for q in queries])
    for q, v in zip(queries, qv, strict=True):
        pool = ds.pool(q)
        docs = passages.encode([m.content for m in pool])
        top = [pool[j].memory_id for j in np.argsort(-(docs @ v))[:10]]
        out["R@10"].append(recall_at_k(top, q.relevant, 10))
        out["nDCG@10"].append(ndcg_at_k(top, q.relevant, 10))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--datasets", default="realmem,locomo,scifact")
    args = ap.parse_args()
    settings = load_settings(embedding_model=BGE_SMALL.name)
    data = resolve_data_dir(settings)
    passages = eval_embedder(settings)  # queries and passages share the int8 model and its cache
    loaders = {
        "locomo": lambda: load_locomo(data, split=args.split),
        "realmem": lambda: load_realmem(data, split=args.split),
        "scifact": lambda: load_scifact(data, args.split),
    }
    for name in args.datasets.split(","):
        ds = loaders[name]()
        plain, told = scores(ds, passages, ""), scores(ds, passages, INSTRUCTION)
        cells = []
        for m in ("R@10", "nDCG@10"):
            lo, hi = paired_interval(told[m], plain[m])
            d = mean(told[m]) - mean(plain[m])
            cells.append(f"{m} {mean(plain[m]):.3f} → {mean(told[m]):.3f} ({d:+.3f} [{lo:+.3f}, {hi:+.3f}])")
        print(
            f"{name} {args.split} (n={len(plain['R@10'])}), dense alone, without → with the instruction: "
            + "; ".join(cells),
            flush=True,
        )


if __name__ == "__main__":
    main()
