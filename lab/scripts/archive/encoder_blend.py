"""Two encoders read together: each memory's all-MiniLM-L6-v2 and multilingual-e5-small vectors,
normalised and concatenated (768 dimensions), so one cosine is the mean of the two encoders'
cosines (issue 53: the lever left after e5 alone trailed MiniLM on SciFact and RealMem;
``--second e5-small-v2``: issue 68). ``mm3 w``: BM25 half, the two kNN legs min-maxed apart and
weighted ``1 − w`` / ``w``.

A screen before any service change: dense retrieval alone and a plain min-max fusion with a
BM25 computed here (Lucene's formula, k1 1.2, b 0.75, the pool's own statistics, the service's
analyzer approximated by lower-cased word tokens), each pool as the evaluation builds it (LoCoMo:
a conversation; SciFact: the corpus; RealMem: a persona's turns before the question).

    BRAIN_DATA_DIR=../shared/data PYTHONPATH=.:lab .venv/bin/python lab/scripts/archive/encoder_blend.py \
        --split dev [--second e5-small-v2]

Vectors come from the evaluation's cache (``<cache dir>/embeddings``); a text not there is encoded.
Prints R@10 / nDCG@10 / MRR@10 per dataset and variant.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from brain_lab.eval.datasets import Dataset, Memory, load_locomo, load_scifact
from brain_lab.eval.metrics import ndcg_at_k, recall_at_k, reciprocal_rank
from brain_lab.eval.realmem import load_realmem
from brain_lab.eval.runner import eval_embedder, eval_query_embedder

from brain_search.config import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from splade_screen import WORD, allowed, bm25, minmax, unit  # the same in-script BM25 and fusion as the SPLADE screen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    ap.add_argument("--datasets", default="locomo,scifact,realmem")
    ap.add_argument("--second", default="multilingual-e5-small", help="the second encoder (e5-small-v2: issue 68)")
    args = ap.parse_args()
    data = Path(os.environ.get("BRAIN_DATA_DIR", "../shared/data"))
    minilm = Settings(embedding_model="all-MiniLM-L6-v2")
    e5s = Settings(embedding_model=args.second)
    m_side = eval_embedder(minilm)
    e_pass = eval_embedder(e5s)
    e_query = eval_query_embedder(e5s, e_pass)
    loaders = {
        "locomo": lambda: load_locomo(data, args.split),
        "scifact": lambda: load_scifact(data, args.split),
        "realmem": lambda: load_realmem(data, split=args.split),
    }
    for name in args.datasets.split(","):
        ds: Dataset = loaders[name]()
        report(name, ds, m_side, e_pass, e_query)


def report(name: str, ds: Dataset, m_side, e_pass, e_query) -> None:  # type: ignore[no-untyped-def]
    qtexts = [q.text for q in ds.queries]
    qm = unit(np.asarray(m_side.encode(qtexts), dtype=np.float32))
    qe = unit(np.asarray(e_query.encode(qtexts), dtype=np.float32))
    pools: dict[str, tuple[list[Memory], np.ndarray, np.ndarray, list[list[str]]]] = {}
    for tenant, mems in ds.memories.items():
        texts = [m.content for m in mems]
        pools[tenant] = (
            mems,
            unit(np.asarray(m_side.encode(texts), dtype=np.float32)),
            unit(np.asarray(e_pass.encode(texts), dtype=np.float32)),
            [WORD.findall(t.lower()) for t in texts],
        )
    weights = (0.3, 0.5, 0.7, 0.8, 0.9)  # e5's share of the cosine (its cosines span a band ~4x narrower)
    variants = ["bm25", "minilm", "e5", "mm minilm", "mm e5"]
    variants += [f"blend {w}" for w in weights] + [f"mm blend {w}" for w in weights] + [f"mm3 {w}" for w in weights]
    got: dict[str, list[tuple[float, float, float]]] = {v: [] for v in variants}
    for i, q in enumerate(ds.queries):
        mems, vm, ve, toks = pools[q.tenant_id]
        idx = allowed(q, mems)
        if not len(idx):
            continue
        ids = [mems[j].memory_id for j in idx]
        sm, se = vm[idx] @ qm[i], ve[idx] @ qe[i]
        lex = bm25([toks[j] for j in idx], WORD.findall(q.text.lower()))
        scores = {
            "bm25": lex,
            "minilm": sm,
            "e5": se,
            "mm minilm": 0.5 * minmax(lex) + 0.5 * minmax(sm),
            "mm e5": 0.5 * minmax(lex) + 0.5 * minmax(se),
        }
        for w in weights:
            scores[f"blend {w}"] = (1 - w) * sm + w * se
            scores[f"mm blend {w}"] = 0.5 * minmax(lex) + 0.5 * minmax((1 - w) * sm + w * se)
            scores[f"mm3 {w}"] = 0.5 * minmax(lex) + 0.5 * ((1 - w) * minmax(sm) + w * minmax(se))
        for v, s in scores.items():
            top = [ids[j] for j in np.argsort(-s, kind="stable")[:10]]
            got[v].append(
                (recall_at_k(top, q.relevant, 10), ndcg_at_k(top, q.relevant, 10), reciprocal_rank(top, q.relevant, 10))
            )
    print(f"{name} {ds.split} ({len(got['bm25'])} queries)  R@10 / nDCG@10 / MRR@10", flush=True)
    for v in variants:
        a = np.array(got[v])
        print(f"  {v:10s} {a[:, 0].mean():.3f} / {a[:, 1].mean():.3f} / {a[:, 2].mean():.3f}", flush=True)


if __name__ == "__main__":
    main()
