#!/usr/bin/env python
"""Quality of int8 query vectors (not a test): the API's query encoder in fp32 and in int8 on the
real evaluation queries, against the fp32 document vectors of the evaluation's disk cache.

    PYTHONPATH=. .venv/bin/python lab/scripts/check_query_int8.py

Prints, per data set: the cosine between each query's int8 and fp32 vector, the overlap of the
exact dense top-10 (cosine over the query's own tenant: a conversation, or the SciFact corpus),
and dense nDCG@10 / R@10 of both. Dense only, exact search: the change the model makes, with no
BM25 or HNSW noise around it. Also checks the direct fp32 encoder against sentence-transformers.
Documents are read from the evaluation's embedding cache (encoded there if missing: SciFact's
corpus takes minutes the first time).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain_lab.eval.datasets import Dataset, load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.metrics import ndcg_at_k, recall_at_k

from brain_search.config import load_settings
from brain_search.encoders.embedding import OnnxQueryEmbedder
from brain_search.encoders.factory import make_embedder


def main() -> None:
    s = load_settings()
    data_dir = resolve_data_dir(s)
    root = s.cache_dir / "embeddings"
    docs = CachedEmbedder(root, s.embedding_model, s.embedding_dimension, lambda: make_embedder(s))
    fp32 = OnnxQueryEmbedder(s.models_dir, s.embedding_model, 1, quantized=False)
    int8 = OnnxQueryEmbedder(s.models_dir, s.embedding_model, 1, quantized=True)
    sets: list[Dataset] = [load_scifact(data_dir, "dev"), load_scifact(data_dir, "test"), load_locomo(data_dir)]

    st = make_embedder(s, 1)
    probe = [q.text for q in sets[-1].queries[:100]]
    c = (st.encode(probe) * fp32.encode(probe)).sum(1)
    print(f"direct fp32 vs sentence-transformers, 100 LoCoMo queries: cosine min {c.min():.6f}")

    print(
        "| data (queries) | cosine int8·fp32 mean / p1 / min | top-10 overlap mean / min | "
        "nDCG@10 fp32 → int8 (paired diff ± 95 %) | R@10 fp32 → int8 |"
    )
    print("|---|---|---|---|---|")
    for ds in sets:
        tenants = {}
        for tenant, mems in ds.memories.items():
            tenants[tenant] = ([m.memory_id for m in mems], docs.encode([m.content for m in mems]))
        texts = [q.text for q in ds.queries]
        a = np.vstack([fp32.encode([t]) for t in texts])  # one at a time, as the API encodes
        b = np.vstack([int8.encode([t]) for t in texts])
        cos = (a * b).sum(1)
        overlap, nd, rc = [], {"fp32": [], "int8": []}, {"fp32": [], "int8": []}
        for i, q in enumerate(ds.queries):
            ids, mat = tenants[q.tenant_id]
            tops = {}
            for name, v in (("fp32", a[i]), ("int8", b[i])):
                top = np.argsort(-(mat @ v), kind="stable")[:10]
                tops[name] = [ids[j] for j in top]
                nd[name].append(ndcg_at_k(tops[name], q.relevant, 10))
                rc[name].append(recall_at_k(tops[name], q.relevant, 10))
            overlap.append(len(set(tops["fp32"]) & set(tops["int8"])) / 10)
        diff = np.array(nd["int8"]) - np.array(nd["fp32"])
        ci = 1.96 * diff.std(ddof=1) / np.sqrt(len(diff))
        print(
            f"| {ds.name} {ds.split} ({len(texts)}) | {cos.mean():.4f} / {np.percentile(cos, 1):.4f} / {cos.min():.4f} "
            f"| {np.mean(overlap):.3f} / {min(overlap):.1f} "
            f"| {np.mean(nd['fp32']):.4f} → {np.mean(nd['int8']):.4f} ({diff.mean():+.4f} ± {ci:.4f}) "
            f"| {np.mean(rc['fp32']):.4f} → {np.mean(rc['int8']):.4f} |"
        )


if __name__ == "__main__":
    main()
