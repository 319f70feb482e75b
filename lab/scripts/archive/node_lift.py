"""Issue 26, lever 3 ("session-level evidence"), screened through the real recall on dev.

Each dev question goes through the service's own plan, ``_msearch``, features and relevance
(Z-aware, time words read as the eval's Z-aware system reads them), with the node lift
``RankingParams.node_lift`` = λ: a node (LoCoMo: the session) lifts its memories, relevance' =
(relevance + λ · best relevance among the node's candidates) / (1 + λ). Prints R@10 / nDCG@10
per λ with the paired difference to λ = 0.

Needs the engine with the eval indices (``brain-search eval`` builds them).

    PYTHONPATH=. .venv/bin/python lab/scripts/node_lift.py [locomo|scifact] [dev|test]

λ is chosen on dev; ``test`` reports the held-out effect of the λ values once, after the choice.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
from brain_lab.eval.datasets import ADVERSARIAL, load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.fit import candidates_of
from brain_lab.eval.indexing import dataset_settings
from brain_lab.eval.metrics import ndcg_at_k, paired_interval, recall_at_k

from brain_search.config import load_settings
from brain_search.encoders.factory import make_embedder
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.score import scoring
from brain_search.store.client import make_client

LAMBDAS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)


def mean_interval(values: list[float], n: int = 2000, seed: int = 7) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the mean."""
    v = np.asarray(values)
    idx = np.random.default_rng(seed).integers(0, len(v), (n, len(v)))
    lo, hi = np.percentile(v[idx].mean(axis=1), [2.5, 97.5])
    return float(lo), float(hi)


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "locomo"
    split = sys.argv[2] if len(sys.argv) > 2 else "dev"
    base = load_settings().model_copy(update={"index_prefix": "bt-evalrun"})
    settings = dataset_settings(base, name)
    data_dir = resolve_data_dir(settings)
    data = load_locomo(data_dir, split) if name == "locomo" else load_scifact(data_dir, split)
    emb = CachedEmbedder(
        settings.cache_dir / "embeddings", settings.embedding_model, settings.embedding_dimension,
        lambda: make_embedder(settings),
    )  # fmt: skip
    retriever = Retriever(make_client(settings), settings, QueryCache(emb, 256))
    limit = 10 if name == "locomo" else 100
    got: dict[float, dict[str, list[float]]] = {lam: {"R@10": [], "nDCG@10": []} for lam in LAMBDAS}
    qs = [q for q in data.queries if q.category != ADVERSARIAL]
    for n, q in enumerate(qs):
        ref = data.reference_times.get(q.tenant_id)
        req = RecallRequest(query=q.text, limit=limit, reference_time=ref, time_words=ref is not None)
        plan, cands = candidates_of(retriever, q.tenant_id, req)
        ranking = retriever.ranking if plan.source == "auto" else retriever.ranking.for_explicit_z()
        f = scoring.features(plan.intent, plan.terms, cands, retriever.calibration, term_idf=plan.term_idf)
        keys = [c.doc_id for c in cands]
        for lam in LAMBDAS:
            r = scoring.relevance(plan.intent, f, replace(ranking, node_lift=lam), len(plan.terms))
            order = sorted(range(len(r)), key=lambda i: (-r[i], keys[i]))
            top = [f.ids[i] for i in order[:10]]
            got[lam]["R@10"].append(recall_at_k(top, q.relevant, 10))
            got[lam]["nDCG@10"].append(ndcg_at_k(top, q.relevant, 10))
        if n % 200 == 0:
            print(f"· {n}/{len(qs)}", flush=True)
    print(f"\n{name} {split}, n={len(qs)} (paired difference to λ=0, 95 % bootstrap)")
    for metric in ("R@10", "nDCG@10"):
        b = got[0.0][metric]
        print(f"\n{metric}: λ=0 {np.mean(b):.3f}")
        for lam in LAMBDAS[1:]:
            lo, hi = paired_interval(got[lam][metric], b)
            m = np.mean(got[lam][metric])
            mlo, mhi = mean_interval(got[lam][metric])
            print(f"  λ={lam:<5} {m:.3f} [{mlo:.3f}, {mhi:.3f}]  Δ {m - np.mean(b):+.3f} [{lo:+.3f}, {hi:+.3f}]")


if __name__ == "__main__":
    main()
