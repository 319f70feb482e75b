"""The held-out pattern on our own data (issue 68, item 5): the held-out set of long assistant
conversations asks its questions over one pool of ~10.9k turns, where the product trailed plain
fusion; our LoCoMo evaluation asks each question over its own conversation only. Here all ten
LoCoMo conversations are one tenant (5,882 turns; each conversation's sessions stay their nodes,
ids become ``conv-26:D1:3``), and each question of the split is ranked by the product and by
plain min-max 0.5/0.5 and bare BM25 over the same candidates (``category_screen.py``'s reranks),
overall and per category, with 95 % paired-bootstrap intervals against the better baseline.

    BRAIN_EMBEDDING_MODEL=<encoder> PYTHONPATH=.:lab .venv/bin/python lab/scripts/one_pool.py \\
        --split test --index-prefix btpool [--variants brain,brain-noZ,...] [--json out/one-pool.json]
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import category_screen as screen
from brain_lab.eval import fit
from brain_lab.eval.datasets import ADVERSARIAL, Dataset, load_locomo, resolve_data_dir
from brain_lab.eval.indexing import index_dataset
from brain_lab.eval.runner import eval_embedder, eval_query_embedder

from brain_search.config import load_settings
from brain_search.encoders.factory import query_cut
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.score import scoring
from brain_search.store.client import make_client

POOL = "pool"


def pooled(ds: Dataset) -> Dataset:
    """Every conversation's turns in one tenant, ids prefixed by their conversation (pure)."""
    memories = [replace(m, memory_id=f"{t}:{m.memory_id}") for t, ms in sorted(ds.memories.items()) for m in ms]
    queries = [
        replace(q, tenant_id=POOL, relevant={f"{q.tenant_id}:{i}": g for i, g in q.relevant.items()})
        for q in ds.queries
    ]
    return Dataset(name="locomo", split="pool", memories={POOL: memories}, queries=queries, counts=ds.counts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", choices=("dev", "test"), default="test")
    ap.add_argument("--index-prefix", default="btpool")
    ap.add_argument("--variants", default="brain", help="category_screen's variants, comma-separated")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    settings = load_settings(index_prefix=args.index_prefix)
    data = resolve_data_dir(settings)
    client = make_client(settings)
    every = pooled(load_locomo(data))
    asked = {q.query_id for q in load_locomo(data, split=args.split).queries}
    passages = eval_embedder(settings)
    indexed = index_dataset(client, settings, every, passages)
    print(f"{every.n_memories} turns in one pool ({indexed.index}, reused: {indexed.reused})", flush=True)
    query_side = query_cut(settings, eval_query_embedder(settings, passages))
    retriever = Retriever(client, indexed.settings, QueryCache(query_side, 64))
    queries = []
    for q in every.queries:
        if q.query_id not in asked or q.category == ADVERSARIAL:
            continue
        req = RecallRequest(query=q.text, limit=10, time_words=False)
        plan, cands = fit.candidates_of(retriever, POOL, req)
        f = scoring.features(plan.intent, plan.terms, cands, retriever.calibration, term_idf=plan.term_idf)
        queries.append(fit.FitQuery("locomo-pool", q.query_id, q.text, dict(q.relevant), [c.doc_id for c in cands], f))
    cache = Path("out") / f"one-pool-{settings.embedding_model}-{args.split}.intents.pkl"
    cache.parent.mkdir(parents=True, exist_ok=True)
    intents = screen.intents_for(queries, settings, cache)
    cats = {q.query_id: q.category or "all" for q in every.queries}
    print(f"{len(queries)} {args.split} questions over one pool, {settings.embedding_model}:", flush=True)
    names = [n for n in args.variants.split(",") if n]
    result = screen.report(queries, intents, cats, names, settings.embedding_model)
    if args.json:
        screen.save(args.json, settings.embedding_model, args.split, result)


if __name__ == "__main__":
    main()
