"""Issue 26, lever 2 ("long memories"), screened offline on SciFact dev (train qrels).

all-MiniLM-L6-v2 reads the first 256 word pieces of a memory; a SciFact abstract is often longer, so
its tail is invisible to kNN. Each document is keyed several ways and each claim is ranked over the
whole corpus by kNN alone and by a min-max fusion of kNN with an in-memory BM25 (k1 1.2, b 0.75):

- ``plain``: one vector of the whole text, cut at 256 word pieces (what the service stores today);
- ``max-sim N``: the text cut into pieces of about N characters (``chunking.chunk_text``, overlap
  N/5), each piece its own vector, and a document scores its best piece;
- ``mean N``: the mean of those pieces' vectors, normalised (one vector, no mapping change).

Prints R@10 and nDCG@10 per key with the paired difference to ``plain`` and its 95 % bootstrap
interval. Dev only: a screen that decides whether the lever is worth building. No engine needed.

    PYTHONPATH=. .venv/bin/python lab/scripts/chunk_keys.py [1000 500] [dev|test]
"""

from __future__ import annotations

import re
import sys
from collections import Counter

import numpy as np
from brain_lab.eval.datasets import load_scifact, resolve_data_dir
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.metrics import ndcg_at_k, paired_interval, recall_at_k
from scipy import sparse

from brain_search.config import load_settings
from brain_search.encoders.factory import make_embedder
from brain_search.ingest.chunking import chunk_text

TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


class Bm25:
    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        lengths = np.array([len(d) for d in docs], dtype=float)
        avg = lengths.mean()
        for i, d in enumerate(docs):
            for t, tf in Counter(d).items():
                j = self.vocab.setdefault(t, len(self.vocab))
                rows.append(i)
                cols.append(j)
                vals.append(tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / avg)))
        self.m = sparse.csc_matrix((vals, (rows, cols)), shape=(len(docs), len(self.vocab)))
        df = np.diff(self.m.indptr)
        n = len(docs)
        self.idf = np.log(1 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        q = [self.vocab[t] for t in set(tokens(query)) if t in self.vocab]
        if not q:
            return np.zeros(self.m.shape[0])
        return np.asarray(self.m[:, q] @ self.idf[q]).ravel()


def minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def main() -> None:
    split = next((a for a in sys.argv[1:] if a in ("dev", "test")), "dev")
    sizes = [int(a) for a in sys.argv[1:] if a.isdigit()] or [1000, 500]
    settings = load_settings()
    data = load_scifact(resolve_data_dir(settings), split)
    emb = CachedEmbedder(
        settings.cache_dir / "embeddings",
        settings.embedding_model,
        settings.embedding_dimension,
        lambda: make_embedder(settings),
    )
    mems = data.memories["scifact"]
    texts = [m.content for m in mems]
    ids = [m.memory_id for m in mems]
    plain = emb.encode(texts)
    scorers: dict[str, object] = {}
    for size in sizes:
        owner: list[int] = []
        pieces: list[str] = []
        for i, t in enumerate(texts):
            for p in chunk_text(t, size, size // 5):
                owner.append(i)
                pieces.append(p)
        print(f"· {size} chars: {len(pieces)} pieces for {len(texts)} documents", flush=True)
        pv = emb.encode(pieces)
        own = np.array(owner)
        mean = np.zeros_like(plain)
        np.add.at(mean, own, pv)
        mean /= np.linalg.norm(mean, axis=1, keepdims=True)
        scorers[f"max-sim {size}"] = (pv, own)
        scorers[f"mean {size}"] = mean
    bm = Bm25([tokens(t) for t in texts])
    keys = ["plain", *scorers]
    metrics = ("knn R@10", "knn nDCG@10", "fused R@10", "fused nDCG@10")
    got: dict[str, dict[str, list[float]]] = {k: {m: [] for m in metrics} for k in keys}
    qv = emb.encode([q.text for q in data.queries])
    for q, v in zip(data.queries, qv, strict=True):
        lex = minmax(bm.scores(q.text))
        for k in keys:
            s = scorers.get(k)
            if k == "plain":
                cos = plain @ v
            elif isinstance(s, tuple):
                pv, own = s
                cos = np.full(len(texts), -1.0)
                np.maximum.at(cos, own, pv @ v)
            else:
                cos = s @ v  # type: ignore[operator]
            knn = [ids[i] for i in np.argsort(-cos)[:10]]
            fused = 0.5 * lex + 0.5 * minmax(cos)
            top = [ids[i] for i in np.argsort(-fused)[:10]]
            got[k]["knn R@10"].append(recall_at_k(knn, q.relevant, 10))
            got[k]["knn nDCG@10"].append(ndcg_at_k(knn, q.relevant, 10))
            got[k]["fused R@10"].append(recall_at_k(top, q.relevant, 10))
            got[k]["fused nDCG@10"].append(ndcg_at_k(top, q.relevant, 10))
    print(f"\nSciFact {split}, n={len(data.queries)} claims (paired difference to plain, 95 % bootstrap)")
    for metric in metrics:
        base = got["plain"][metric]
        print(f"\n{metric}: plain {np.mean(base):.3f}")
        for k in keys[1:]:
            lo, hi = paired_interval(got[k][metric], base)
            m = np.mean(got[k][metric])
            print(f"  {k:<14} {m:.3f}  Δ {m - np.mean(base):+.3f} [{lo:+.3f}, {hi:+.3f}]")


if __name__ == "__main__":
    main()
