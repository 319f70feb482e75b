"""bge-small-en-v1.5's two jars side by side (issue 68): dense retrieval alone with the int8 model
(what the service runs) and the fp32 one, on LoCoMo (each question over its own conversation's
turns, categories 1–4) and, with ``--scifact``, SciFact; R@10 and nDCG@10 per split with the 95 %
paired-bootstrap interval of fp32 − int8, and the mean cosine between the two vectors of a text.

    PYTHONPATH=.:lab .venv/bin/python lab/scripts/bge_precision.py [--scifact]

Vectors are cached under ``<cache dir>/embeddings`` (``bge-small-en-v1.5-passage-int8-512``, the
evaluation's, and ``bge-small-en-v1.5-passage-fp32-512``).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.datasets import ADVERSARIAL, Dataset, load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.metrics import mean, ndcg_at_k, paired_interval, recall_at_k
from brain_lab.eval.runner import eval_embedder

from brain_search.config import Settings, load_settings
from brain_search.encoders.base import BGE_SMALL
from brain_search.encoders.factory import bge_encoder


def fp32_cache(settings: Settings) -> CachedEmbedder:
    return CachedEmbedder(
        settings.cache_dir / "embeddings",
        f"{BGE_SMALL.name}-passage-fp32-{BGE_SMALL.max_tokens}",
        BGE_SMALL.dimension,
        lambda: bge_encoder(settings, quantized=False, intra_op_threads=0),
    )


def dense_scores(ds: Dataset, emb: CachedEmbedder) -> dict[str, list[float]]:
    """Per question: R@10 and nDCG@10 of cosine alone over its tenant's memories."""
    out: dict[str, list[float]] = {"R@10": [], "nDCG@10": []}
    for tenant, memories in sorted(ds.memories.items()):
        qs = [q for q in ds.queries if q.tenant_id == tenant and q.category != ADVERSARIAL]
        if not qs:
            continue
        ids = [m.memory_id for m in memories]
        docs = emb.encode([m.content for m in memories])
        sims = emb.encode([q.text for q in qs]) @ docs.T
        for i, q in enumerate(qs):
            top = [ids[j] for j in np.argsort(-sims[i])[:10]]
            out["R@10"].append(recall_at_k(top, q.relevant, 10))
            out["nDCG@10"].append(ndcg_at_k(top, q.relevant, 10))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scifact", action="store_true", help="SciFact too (its 5,183 abstracts in fp32: ~30 CPU-min)")
    args = ap.parse_args()
    settings = load_settings(embedding_model=BGE_SMALL.name)
    data = resolve_data_dir(settings)
    int8, fp32 = eval_embedder(settings), fp32_cache(settings)
    sets = [(f"LoCoMo {s}", load_locomo(data, split=s)) for s in ("dev", "test")]  # type: ignore[arg-type]
    if args.scifact:
        sets += [(f"SciFact {s}", load_scifact(data, s)) for s in ("dev", "test")]  # type: ignore[arg-type]
    for name, ds in sets:
        a, b = dense_scores(ds, int8), dense_scores(ds, fp32)
        cells = []
        for m in ("R@10", "nDCG@10"):
            lo, hi = paired_interval(b[m], a[m])
            delta = mean(b[m]) - mean(a[m])
            cells.append(f"{m} int8 {mean(a[m]):.3f} fp32 {mean(b[m]):.3f} (Δ {delta:+.3f} [{lo:+.3f}, {hi:+.3f}])")
        texts = [m.content for ms in ds.memories.values() for m in ms][:500]
        cos = float(np.mean((int8.encode(texts) * fp32.encode(texts)).sum(axis=1)))
        print(f"{name} (n={len(a['R@10'])}): " + "; ".join(cells) + f"; mean cosine int8·fp32 {cos:.4f}", flush=True)


if __name__ == "__main__":
    main()
