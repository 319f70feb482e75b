"""Issue 26 (latency): what counting inside the search costs the ranking, through the real
recall on the eval indices.

With tenant statistics a recall needs each query word's count over the tenant's memories. The
service counted first (one round trip before the search); now, once a tenant has been counted, it
picks its lexical top k by the last counts (``WeightCache``: a word never counted for the tenant
is guessed as rare as any word can be) and counts again inside its own ``_msearch``, scoring by
that. The scores are the same; only which memories make the lexical top k can move, when a guess
was wrong and more than k memories match. This runs every question three ways, in one process:

- ``count first``: the old path (the cache never answers);
- ``riding``: the service's default (``LEXICAL_MARGIN`` = 1, no margin);
- ``riding, margin 2``: 2k lexical hits fetched when a weight was guessed, the k best kept.

and prints R@10 / nDCG@10 with the paired difference to ``count first`` and the share of
questions that guessed. Needs the engine with the eval indices (``brain-search eval`` builds them).

    PYTHONPATH=. .venv/bin/python lab/scripts/riding_counts.py [locomo|scifact] [dev|test]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
from brain_lab.eval.datasets import ADVERSARIAL, load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.indexing import dataset_settings
from brain_lab.eval.metrics import ndcg_at_k, paired_interval, recall_at_k

from brain_search.config import load_settings
from brain_search.embedding import QueryCache, make_embedder
from brain_search.models import RecallRequest
from brain_search.retrieval import pipeline
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.tenant_stats import WeightCache
from brain_search.store.client import make_client


class Guesses(WeightCache):
    """The service's cache, counting the recalls that had to guess a word's weight."""

    asked = 0
    guessed = 0

    def provisional(self, tenant_id: str, words: Sequence[str]) -> tuple[dict[str, float], bool] | None:
        out = super().provisional(tenant_id, words)
        self.asked += 1
        self.guessed += bool(out and out[1])
        return out


class CountFirst(WeightCache):
    """A cache that never answers: every recall counts before its search (the old path)."""

    def provisional(self, tenant_id: str, words: Sequence[str]) -> tuple[dict[str, float], bool] | None:
        return None


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "locomo"
    split = sys.argv[2] if len(sys.argv) > 2 else "dev"
    base = load_settings().model_copy(update={"index_prefix": "bt-evalrun"})
    settings = dataset_settings(base, name)
    data = load_locomo(resolve_data_dir(settings), split) if name == "locomo" else load_scifact(
        resolve_data_dir(settings), split
    )  # fmt: skip
    emb = CachedEmbedder(
        settings.cache_dir / "embeddings", settings.embedding_model, settings.embedding_dimension,
        lambda: make_embedder(settings),
    )  # fmt: skip
    client = make_client(settings)
    limit = 10 if name == "locomo" else 100
    qs = [q for q in data.queries if q.category != ADVERSARIAL]
    riding = Guesses()
    arms = {"count first": (CountFirst(), 1), "riding": (riding, 1), "riding, margin 2": (Guesses(), 2)}
    got = {arm: {"R@10": [], "nDCG@10": []} for arm in arms}
    default_margin = pipeline.LEXICAL_MARGIN
    for arm, (cache, margin) in arms.items():
        pipeline.LEXICAL_MARGIN = margin
        retriever = Retriever(client, settings, QueryCache(emb, 256))
        retriever.weight_cache = cache
        for q in qs:
            ref = data.reference_times.get(q.tenant_id)
            req = RecallRequest(query=q.text, limit=limit, reference_time=ref, time_words=ref is not None)
            top = [r.id for r in retriever.recall(q.tenant_id, req).results[:10]]
            got[arm]["R@10"].append(recall_at_k(top, q.relevant, 10))
            got[arm]["nDCG@10"].append(ndcg_at_k(top, q.relevant, 10))
        print(f"· {arm} done", flush=True)
    pipeline.LEXICAL_MARGIN = default_margin
    print(f"\n{name} {split}, n={len(qs)} (paired difference to 'count first', 95 % bootstrap)")
    print(f"riding: {riding.guessed} of {riding.asked} recalls with words guessed a weight")
    for metric in ("R@10", "nDCG@10"):
        b = got["count first"][metric]
        print(f"\n{metric}: count first {np.mean(b):.3f}")
        for arm in list(arms)[1:]:
            lo, hi = paired_interval(got[arm][metric], b)
            m = np.mean(got[arm][metric])
            same = sum(x == y for x, y in zip(got[arm][metric], b, strict=True))
            print(f"  {arm:<17} {m:.3f}  Δ {m - np.mean(b):+.3f} [{lo:+.3f}, {hi:+.3f}]  same on {same}/{len(b)}")


if __name__ == "__main__":
    main()
