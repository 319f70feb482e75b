"""Issue 26, lever 1 ("context in each memory's key"), screened offline on LoCoMo dev.

Does a turn's key that also carries its neighbours find the evidence turn more often? Each dev
conversation's turns are keyed four ways, and each question (categories 1–4) is ranked within its
conversation by kNN alone and by a min-max fusion of kNN with an in-memory BM25 (k1 1.2, b 0.75,
the conversation's own statistics, as the service's tenant statistics):

- ``plain``: the turn's own vector (what the service stores today);
- ``mix a``: normalise(v_turn + a·(v_prev + v_next)) within the session (no extra encoding);
- ``text prev+turn``: the previous turn's words and the turn's, encoded together.

Prints R@10 and nDCG@10 per key with the paired difference to ``plain`` and its 95 % bootstrap
interval. Dev only: this is a screen that decides whether the lever is worth building into the
ingest path, not a reported result. No engine is needed; vectors come from the eval's cache.

    PYTHONPATH=. .venv/bin/python lab/scripts/context_keys.py [dev|test]
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from collections.abc import Sequence

import numpy as np
from brain_lab.eval.datasets import ADVERSARIAL, Memory, load_locomo, resolve_data_dir
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.metrics import ndcg_at_k, paired_interval, recall_at_k

from brain_search.config import load_settings
from brain_search.encoders.factory import make_embedder

TOKEN = re.compile(r"[a-z0-9]+")
STOP = set(
    "the a an and or of to in on for is are was were be been it this that i you he she we they my your do did".split()
)


def tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text.lower()) if t not in STOP]


def bm25_scores(query: str, docs: Sequence[list[str]], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    n = len(docs)
    avg = sum(len(d) for d in docs) / max(n, 1)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    out = np.zeros(n)
    for t in set(tokens(query)):
        if t not in df:
            continue
        idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
        for i, d in enumerate(docs):
            tf = d.count(t)
            if tf:
                out[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avg))
    return out


def minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def neighbours(mems: list[Memory]) -> list[tuple[int | None, int | None]]:
    out: list[tuple[int | None, int | None]] = []
    for i, m in enumerate(mems):
        prev = i - 1 if i > 0 and mems[i - 1].node_id == m.node_id else None
        nxt = i + 1 if i + 1 < len(mems) and mems[i + 1].node_id == m.node_id else None
        out.append((prev, nxt))
    return out


def main() -> None:
    settings = load_settings()
    split = sys.argv[1] if len(sys.argv) > 1 else "dev"
    data = load_locomo(resolve_data_dir(settings), split)
    emb = CachedEmbedder(
        settings.cache_dir / "embeddings",
        settings.embedding_model,
        settings.embedding_dimension,
        lambda: make_embedder(settings),
    )
    keys = ["plain", "mix 0.25", "mix 0.5", "text prev+turn"]
    metrics = ("knn R@10", "fused R@10", "fused nDCG@10")
    per_key: dict[str, dict[str, list[float]]] = {k: {m: [] for m in metrics} for k in keys}
    for tenant, mems in data.memories.items():
        texts = [m.content for m in mems]
        plain = emb.encode(texts)
        nb = neighbours(mems)
        joined = [
            (mems[p].content + " " if p is not None else "") + m.content for m, (p, _) in zip(mems, nb, strict=True)
        ]
        vectors: dict[str, np.ndarray] = {"plain": plain, "text prev+turn": emb.encode(joined)}
        for a in (0.25, 0.5):
            mixed = plain.copy()
            for i, (p, n) in enumerate(nb):
                for j in (p, n):
                    if j is not None:
                        mixed[i] += a * plain[j]
            vectors[f"mix {a}"] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
        docs = [tokens(t) for t in texts]
        ids = [m.memory_id for m in mems]
        qs = [q for q in data.queries if q.tenant_id == tenant and q.category != ADVERSARIAL]
        qv = emb.encode([q.text for q in qs])
        for q, v in zip(qs, qv, strict=True):
            lex = minmax(bm25_scores(q.text, docs))
            for k in keys:
                cos = vectors[k] @ v
                knn = [ids[i] for i in np.argsort(-cos)[:10]]
                fused = 0.5 * lex + 0.5 * minmax(cos)
                top = [ids[i] for i in np.argsort(-fused)[:10]]
                per_key[k]["knn R@10"].append(recall_at_k(knn, q.relevant, 10))
                per_key[k]["fused R@10"].append(recall_at_k(top, q.relevant, 10))
                per_key[k]["fused nDCG@10"].append(ndcg_at_k(top, q.relevant, 10))
        print(f"· {tenant}: {len(mems)} turns, {len(qs)} questions", flush=True)
    n = len(per_key["plain"]["knn R@10"])
    print(f"\nLoCoMo {split}, categories 1-4, n={n} questions (paired difference to plain, 95 % bootstrap)")
    for metric in ("knn R@10", "fused R@10", "fused nDCG@10"):
        base = per_key["plain"][metric]
        print(f"\n{metric}: plain {np.mean(base):.3f}")
        for k in keys[1:]:
            got = per_key[k][metric]
            lo, hi = paired_interval(got, base)
            print(f"  {k:<16} {np.mean(got):.3f}  Δ {np.mean(got) - np.mean(base):+.3f} [{lo:+.3f}, {hi:+.3f}]")


if __name__ == "__main__":
    main()
