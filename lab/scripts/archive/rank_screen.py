"""Screen ranking levers offline on the dev candidates of ``brain-search eval --fit`` (issue 41).

Every dev query's candidates (both engine scores, lexical precision, Z, node) were fetched once by
the real pipeline (``out/fit/dev-candidates.jsonl``); here each variant re-ranks them in pure Python
with the pipeline's own ``scoring.relevance`` (plus, for a lever not in the service yet, a
post-step defined below), and prints R@10 / nDCG@10 / MRR@10 per dataset beside the same
candidates ranked by plain min-max 0.5/0.5 and by BM25 alone.

    BRAIN_DATA_DIR=... PYTHONPATH=.:lab .venv/bin/python lab/scripts/rank_screen.py \
        --candidates out/fit/dev-candidates.jsonl [--variants base,minmax,bm25,...]

Collect the candidates first (``brain-search eval --fit --datasets locomo,scifact,realmem --out
out/fit``; ``BRAIN_RECALL_CANDIDATES_MIN=100`` in front collects each sub-search 100 deep).
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval import fit
from brain_lab.eval.datasets import resolve_data_dir
from brain_lab.eval.metrics import mean, ndcg_at_k, recall_at_k, reciprocal_rank

from brain_search.config import load_settings
from brain_search.retrieval.intent import QueryIntent
from brain_search.retrieval.score import scoring
from brain_search.retrieval.score.ranking import Normalisation, RankingParams
from brain_search.retrieval.text import query_terms

BASE = RankingParams()
MINMAX = RankingParams(
    norm=Normalisation.sublist,
    sem_weight_mid=0.5,
    sem_weight_slope=0.0,
    z_penalty=0.0,
    outside_factor=1.0,
    lexical_anchor_weight=0.0,
    phrase_bonus=0.0,
    term_scale=0,
    node_lift=0.0,
)
BM25 = replace(MINMAX, sem_weight_mid=0.0)

Rerank = Callable[[fit.FitQuery, QueryIntent], list[float]]


def by_params(p: RankingParams | Callable[[fit.FitQuery], RankingParams]) -> Rerank:
    def rel(q: fit.FitQuery, intent: QueryIntent) -> list[float]:
        params = p(q) if callable(p) else p
        return scoring.relevance(intent, q.features, params, len(query_terms(intent.lexical_query)))

    return rel


def node_capped(inner: Rerank, cap: int, decay: float) -> Rerank:
    """After ``inner``, the k-th memory of a node (k > cap) has its relevance × decay^(k − cap)."""

    def rel(q: fit.FitQuery, intent: QueryIntent) -> list[float]:
        r = inner(q, intent)
        nodes = q.features.nodes or q.features.ids
        order = sorted(range(len(r)), key=lambda i: (-r[i], q.order_keys[i]))
        seen: dict[str, int] = {}
        out = list(r)
        for i in order:
            k = seen.get(nodes[i], 0) + 1
            seen[nodes[i]] = k
            if k > cap:
                out[i] = r[i] * decay ** (k - cap)
        return out

    return rel


def with_target(inner: Rerank, target_z: float) -> Rerank:
    """``inner`` with the query's detected target Z replaced by ``target_z`` (does the intent matter?)."""

    def rel(q: fit.FitQuery, intent: QueryIntent) -> list[float]:
        return inner(q, replace(intent, target_z=target_z))

    return rel


def cosine_weighted(shift: float, pivot: float) -> Rerank:
    """The semantic weight moved by ``shift × (best cosine − pivot)``: trust the kNN leg more when
    its best hit is close to the query (a query-performance signal), less when it is not."""
    return by_params(
        lambda q: replace(BASE, sem_weight_mid=BASE.sem_weight_mid + shift * (max(q.features.cosine) - pivot))
    )


def length_penalised(inner: Rerank, lengths: dict[str, tuple[int, float]], weight: float) -> Rerank:
    """After ``inner``, a memory longer than its tenant's average (words) has its relevance divided
    by ``1 + weight × ln(length / average)``: a prior for the short turn that says the fact over
    the long one that discusses it."""

    def rel(q: fit.FitQuery, intent: QueryIntent) -> list[float]:
        out = []
        for m, r in zip(q.features.ids, inner(q, intent), strict=True):
            n, avg = lengths[m]
            out.append(r / (1 + weight * max(0.0, math.log(max(n, 1) / avg))))
        return out

    return rel


def dev_lengths(data_dir: Path) -> dict[str, tuple[int, float]]:
    """memory id → (its words, its tenant's average words), over the three dev splits."""
    from brain_lab.eval.datasets import load_locomo, load_scifact
    from brain_lab.eval.realmem import load_realmem

    out: dict[str, tuple[int, float]] = {}
    for ds in (load_locomo(data_dir, split="dev"), load_realmem(data_dir, split="dev"), load_scifact(data_dir, "dev")):
        for memories in ds.memories.values():
            words = [len(m.content.split()) for m in memories]
            avg = max(sum(words) / len(words), 1.0)
            out.update({m.memory_id: (n, avg) for m, n in zip(memories, words, strict=True)})
    return out


def ceiling(queries: Sequence[fit.FitQuery]) -> None:
    """Per dataset: the share of relevant memories among the candidates at all, and per sub-search."""
    for ds in sorted({q.dataset for q in queries}):
        sub = [q for q in queries if q.dataset == ds]
        total = found = lex = sem = 0
        for q in sub:
            index = {m: i for i, m in enumerate(q.features.ids)}
            for r in q.relevant:
                total += 1
                if r in index:
                    found += 1
                    lex += q.features.in_lexical[index[r]]
                    sem += q.features.in_semantic[index[r]]
        size = mean(len(q.features.ids) for q in sub)
        print(
            f"{ds}: {len(sub)} queries, {size:.0f} candidates each; relevant among them {found / total:.3f} "
            f"(BM25 hits {lex / total:.3f}, kNN hits {sem / total:.3f})"
        )


def evaluate(queries: Sequence[fit.FitQuery], intents: dict[str, QueryIntent], rerank: Rerank) -> dict[str, dict]:
    per: dict[str, dict[str, list[float]]] = {}
    for q in queries:
        rel = rerank(q, intents[q.text])
        order = sorted(range(len(rel)), key=lambda i: (-rel[i], q.order_keys[i]))
        ranked = [q.features.ids[i] for i in order[:10]]
        d = per.setdefault(q.dataset, {"R@10": [], "nDCG@10": [], "MRR@10": []})
        d["R@10"].append(recall_at_k(ranked, q.relevant, 10))
        d["nDCG@10"].append(ndcg_at_k(ranked, q.relevant, 10))
        d["MRR@10"].append(reciprocal_rank(ranked, q.relevant, 10))
    return {ds: {m: mean(v) for m, v in ms.items()} for ds, ms in per.items()}


def intents_for(queries: Sequence[fit.FitQuery], cache: Path) -> dict[str, QueryIntent]:
    """Each query's detected intent, as ``brain-search eval --fit`` detects it (the service's
    detector over the query vectors of the model the candidates were fetched with), cached beside
    the candidates."""
    if cache.is_file():
        got: dict[str, QueryIntent] = pickle.loads(cache.read_bytes())
        if all(q.text in got for q in queries):
            return got
    from brain_lab.eval.runner import eval_embedder

    from brain_search.retrieval.intent.model import make_intent_detector

    settings = load_settings()
    emb = eval_embedder(settings)
    intents = fit.intents_of(queries, make_intent_detector(settings.intent_model), emb.encode)
    cache.write_bytes(pickle.dumps(intents))
    return intents


def variants(lengths: dict[str, tuple[int, float]] | None = None) -> dict[str, Rerank]:
    v: dict[str, Rerank] = {"base": by_params(BASE), "minmax": by_params(MINMAX), "bm25": by_params(BM25)}
    for a in (0.5, 0.7):
        v[f"anchor{a}"] = by_params(replace(BASE, lexical_anchor_weight=a))
    v["nolift"] = by_params(replace(BASE, node_lift=0.0))
    for cap, decay in ((2, 0.8), (3, 0.8), (3, 0.6), (5, 0.8)):
        v[f"cap{cap}x{decay}"] = node_capped(by_params(BASE), cap, decay)
    v["target0.5"] = with_target(by_params(BASE), 0.5)
    for pivot in (0.6, 0.65):
        for shift in (0.5, 1.0, 2.0):
            v[f"cos{pivot}x{shift}"] = cosine_weighted(shift, pivot)
    if lengths:
        for weight in (0.05, 0.1, 0.2):
            v[f"longpen{weight}"] = length_penalised(by_params(BASE), lengths, weight)
    return v


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--candidates", type=Path, default=Path("out/fit/dev-candidates.jsonl"))
    ap.add_argument("--variants", default="")
    ap.add_argument("--lengths", action="store_true", help="load the dev splits for the length-prior variants")
    args = ap.parse_args()
    queries = fit.load(args.candidates)
    ceiling(queries)
    intents = intents_for(queries, args.candidates.with_suffix(".intents.pkl"))
    wanted = [s for s in args.variants.split(",") if s]
    table = variants(dev_lengths(resolve_data_dir(load_settings())) if args.lengths else None)
    names = wanted or list(table)
    datasets = sorted({q.dataset for q in queries})
    print("variant".ljust(16) + "".join(f"{d} R@10/nDCG/MRR".rjust(28) for d in datasets))
    for name in names:
        res = evaluate(queries, intents, table[name])
        cells = [f"{res[d]['R@10']:.3f}/{res[d]['nDCG@10']:.3f}/{res[d]['MRR@10']:.3f}".rjust(28) for d in datasets]
        print(name.ljust(16) + "".join(cells), flush=True)


if __name__ == "__main__":
    main()
