"""Issue 26, lever 4 (query side: pseudo-relevance feedback on BM25, RM3), screened offline on the
dev splits of both datasets (LoCoMo categories 1–4 within each conversation; SciFact over the
corpus).

RM3: the top ``fb_docs`` BM25 hits are taken as relevant; each term t weighs Σ_d P(t|d)·s(d)
(s: the hit's BM25 share); the ``fb_terms`` heaviest (not in the query, not a stop word) join the
query, the original terms keeping ``keep`` of the weight. Ranked by BM25 alone and by a min-max
fusion (0.5/0.5) with the cosine, against the same without feedback.

    PYTHONPATH=. .venv/bin/python lab/scripts/prf_screen.py [dev|test]
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
from brain_lab.eval.datasets import ADVERSARIAL, load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.metrics import ndcg_at_k, paired_interval, recall_at_k
from chunk_keys import Bm25, minmax, tokens
from context_keys import STOP

from brain_search.config import load_settings
from brain_search.encoders.factory import make_embedder

VARIANTS = {
    "no feedback": None,
    "RM3 3 docs, 10 terms, keep 0.6": (3, 10, 0.6),
    "RM3 5 docs, 10 terms, keep 0.8": (5, 10, 0.8),
}


def rm3_scores(bm: Bm25, docs: list[list[str]], query: str, fb_docs: int, fb_terms: int, keep: float) -> np.ndarray:
    first = bm.scores(query)
    top = [i for i in np.argsort(-first)[:fb_docs] if first[i] > 0]
    if not top:
        return first
    share = first[top] / first[top].sum()
    qt = set(tokens(query))
    weight: Counter[str] = Counter()
    for s, i in zip(share, top, strict=True):
        d = docs[i]
        for t, tf in Counter(d).items():
            if t not in qt and t not in STOP and t in bm.vocab:
                weight[t] += s * tf / len(d)
    terms = weight.most_common(fb_terms)
    if not terms:
        return first
    total = sum(w for _, w in terms)
    cols = [bm.vocab[t] for t, _ in terms]
    w = np.array([x / total for _, x in terms]) * bm.idf[cols]
    expansion = np.asarray(bm.m[:, cols] @ w).ravel()
    return keep * minmax(first) + (1 - keep) * minmax(expansion)


def main() -> None:
    split = sys.argv[1] if len(sys.argv) > 1 else "dev"
    settings = load_settings()
    data_dir = resolve_data_dir(settings)
    emb = CachedEmbedder(
        settings.cache_dir / "embeddings", settings.embedding_model, settings.embedding_dimension,
        lambda: make_embedder(settings),
    )  # fmt: skip
    for ds in (load_locomo(data_dir, split), load_scifact(data_dir, split)):
        got: dict[str, dict[str, list[float]]] = {}
        for tenant, mems in ds.memories.items():
            texts = [m.content for m in mems]
            ids = [m.memory_id for m in mems]
            docs = [tokens(t) for t in texts]
            bm = Bm25(docs)
            vecs = emb.encode(texts)
            qs = [q for q in ds.queries if q.tenant_id == tenant and q.category != ADVERSARIAL]
            for q, v in zip(qs, emb.encode([q.text for q in qs]), strict=True):
                cos = minmax(vecs @ v)
                for name, cfg in VARIANTS.items():
                    lex = bm.scores(q.text) if cfg is None else rm3_scores(bm, docs, q.text, *cfg)
                    for system, s in (("BM25", lex), ("fused", 0.5 * minmax(lex) + 0.5 * cos)):
                        top = [ids[i] for i in np.argsort(-s)[:10]]
                        d = got.setdefault(f"{system} · {name}", {"R@10": [], "nDCG@10": []})
                        d["R@10"].append(recall_at_k(top, q.relevant, 10))
                        d["nDCG@10"].append(ndcg_at_k(top, q.relevant, 10))
        n = len(next(iter(got.values()))["R@10"])
        print(f"\n{ds.name} {split}, n={n} (paired difference to no feedback, 95 % bootstrap)")
        for key, d in got.items():
            system, name = key.split(" · ")
            base = got[f"{system} · no feedback"]
            cells = []
            for metric in ("R@10", "nDCG@10"):
                m = float(np.mean(d[metric]))
                if name == "no feedback":
                    cells.append(f"{metric} {m:.3f}")
                else:
                    lo, hi = paired_interval(d[metric], base[metric])
                    cells.append(f"{metric} {m:.3f} (Δ {m - np.mean(base[metric]):+.3f} [{lo:+.3f}, {hi:+.3f}])")
            print(f"  {key:<40} " + ", ".join(cells))


if __name__ == "__main__":
    main()
