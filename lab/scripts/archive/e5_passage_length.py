"""Dense retrieval alone on SciFact with e5's passages read to 256, 384 or 512 word pieces (issue 53:
"e5's published SciFact figure is at 512 pieces"), beside MiniLM's, on both splits.

    BRAIN_DATA_DIR=../shared/data .venv/bin/python lab/scripts/e5_passage_length.py [256,384,512]

Vectors are cached under ``<cache dir>/embeddings`` (``multilingual-e5-small-passage-int8-<n>``);
prints nDCG@10 and R@10 per split and the encode rate of each length (documents/s, one thread).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
from brain_lab.eval.datasets import load_scifact
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.metrics import ndcg_at_k, recall_at_k
from brain_lab.eval.runner import eval_embedder, eval_query_embedder

from brain_search.config import Settings
from brain_search.encoders.base import E5_SMALL


def e5_passages(settings: Settings, max_tokens: int) -> CachedEmbedder:
    def build():  # type: ignore[no-untyped-def]
        from brain_search.encoders.e5 import E5Encoder, E5Side

        enc = E5Encoder(settings.models_dir, quantized=True, max_tokens=max_tokens, batch_size=1, intra_op_threads=1)
        return E5Side(enc, "passage")

    return CachedEmbedder(settings.cache_dir / "embeddings", f"{E5_SMALL.name}-passage-int8-{max_tokens}", 384, build)


def dense(doc_vecs: np.ndarray, ids: list[str], q_vecs: np.ndarray, queries) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    d = doc_vecs / np.linalg.norm(doc_vecs, axis=1, keepdims=True)
    q = q_vecs / np.linalg.norm(q_vecs, axis=1, keepdims=True)
    sims = q @ d.T
    nd, rc = [], []
    for i, query in enumerate(queries):
        top = [ids[j] for j in np.argsort(-sims[i])[:10]]
        nd.append(ndcg_at_k(top, query.relevant, 10))
        rc.append(recall_at_k(top, query.relevant, 10))
    return float(np.mean(nd)), float(np.mean(rc))


def main() -> None:
    data = Path(os.environ.get("BRAIN_DATA_DIR", "../shared/data"))
    splits = {s: load_scifact(data, s) for s in ("dev", "test")}  # type: ignore[arg-type]
    mems = next(iter(splits["test"].memories.values()))
    ids = [m.memory_id for m in mems]
    texts = [m.content for m in mems]
    minilm = Settings(embedding_model="all-MiniLM-L6-v2")
    e5 = Settings(embedding_model=E5_SMALL.name)
    rows = []
    cached_minilm = eval_embedder(minilm)
    rows.append(("MiniLM 256", cached_minilm, cached_minilm))
    e5_query = eval_query_embedder(e5, eval_embedder(e5))
    lengths = [int(n) for n in (sys.argv[1] if len(sys.argv) > 1 else "256,512").split(",")]
    for n in lengths:
        rows.append((f"e5 {n}", e5_passages(e5, n), e5_query))
    for name, passages, queries_side in rows:
        t0 = time.process_time()
        vecs = np.asarray(passages.encode(texts), dtype=np.float32)
        spent = time.process_time() - t0
        rate = f"{passages.encoded / spent:.1f} docs/CPU-s" if passages.encoded else "cached"
        out = []
        for split, ds in splits.items():
            qv = np.asarray(queries_side.encode([q.text for q in ds.queries]), dtype=np.float32)
            nd, rc = dense(vecs, ids, qv, ds.queries)
            out.append(f"{split} nDCG@10 {nd:.3f} R@10 {rc:.3f} (n={len(ds.queries)})")
        print(f"{name:12s} " + " | ".join(out) + f" | encode {rate}", flush=True)


if __name__ == "__main__":
    main()
