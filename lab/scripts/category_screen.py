"""Where the ranking loses to the same engine's bare BM25 and min-max, by question type (issue 68,
item 5), and what a simpler ranking gives there: candidates fetched once by the real pipeline
(``brain-search eval --fit`` for dev, ``--collect-split test`` here for test), re-ranked in pure
Python by the pipeline's own ``scoring.relevance`` under each variant, beside plain min-max 0.5/0.5
and BM25 alone over the same candidates; per dataset and per category (LoCoMo temporal and
multi-hop, RealMem Dynamic Updating, ...), R@10 / nDCG@10 / MRR@10 with the 95 % paired-bootstrap
interval of each variant against the better of min-max and BM25.

    # dev candidates (and the fit) for an encoder, then test candidates for a one-time read
    BRAIN_EMBEDDING_MODEL=bge-small-en-v1.5 brain-search eval --fit --index-prefix bt68 --out out/fit-bge
    BRAIN_EMBEDDING_MODEL=bge-small-en-v1.5 PYTHONPATH=.:lab .venv/bin/python lab/scripts/category_screen.py \\
        --collect-split test --index-prefix bt68 --candidates out/fit-bge/test-candidates.jsonl
    BRAIN_EMBEDDING_MODEL=bge-small-en-v1.5 PYTHONPATH=.:lab .venv/bin/python lab/scripts/category_screen.py \\
        --candidates out/fit-bge/dev-candidates.jsonl --variants brain,simple,...

The intents are the service's detector for that encoder over its query vectors, as ``--fit`` reads
them. Variants not in the service are defined below.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval import fit
from brain_lab.eval.datasets import load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.metrics import mean, ndcg_at_k, paired_interval, recall_at_k, reciprocal_rank
from brain_lab.eval.realmem import load_realmem

from brain_search.config import Settings, load_settings
from brain_search.retrieval.intent import QueryIntent
from brain_search.retrieval.score import scoring
from brain_search.retrieval.score.ranking import Normalisation, RankingParams, ranking_for
from brain_search.retrieval.text import query_terms

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
METRICS = ("R@10", "nDCG@10", "MRR@10")
WATCHED = ("temporal", "multi-hop", "Dynamic Updating")
"""the question types the held-out set's losses point at (issue 68): LoCoMo's temporal and
multi-hop questions, RealMem's facts that changed"""

Rerank = Callable[[fit.FitQuery, QueryIntent], list[float]]


def by_params(p: RankingParams) -> Rerank:
    def rel(q: fit.FitQuery, intent: QueryIntent) -> list[float]:
        return scoring.relevance(intent, q.features, p, len(query_terms(intent.lexical_query)))

    return rel


def variants(encoder: str) -> dict[str, RankingParams]:
    """The encoder's shipped ranking, the two baselines, and the levers screened (issue 68, item 5)."""
    brain = ranking_for(encoder, 1.0)
    return {
        "brain": brain,
        "defaults": RankingParams(node_lift=1.0),  # all-MiniLM-L6-v2's fit, what an encoder without its own gets
        "minmax": MINMAX,
        "bm25": BM25,
        # lever 1, fewer features: min-max over the two sub-searches with node evidence, and the
        # quote bonus (an exact match first), nothing fitted to the target Z
        "minmax+node": replace(MINMAX, node_lift=brain.node_lift, phrase_bonus=brain.phrase_bonus),
        "minmax+node0.5": replace(MINMAX, node_lift=0.5, phrase_bonus=brain.phrase_bonus),
        "minmax0.6+node": replace(MINMAX, sem_weight_mid=0.6, node_lift=brain.node_lift, phrase_bonus=1.0),
        # the shipped blend without the target-Z terms (no slope, no Z penalty): the intent moves nothing
        "brain-noZ": replace(brain, sem_weight_slope=0.0, z_penalty=0.0, outside_factor=1.0),
        "brain-noanchor": replace(brain, lexical_anchor_weight=0.0),
        # lever 2, the node evidence's strength: at 1.0 a memory's node's best weighs as much as the
        # memory itself, which lifts every turn of the session of a strong match (the multi-hop and
        # changed-fact answers sit in other sessions)
        "brain-node0.5": replace(brain, node_lift=0.5),
        "brain-node0.25": replace(brain, node_lift=0.25),
        # the encoders' own dev fits (2026-12-07, `brain-search eval --fit`), read on test once
        "fit-e5": replace(brain, z_penalty=0.3),
        "fit-bge": replace(brain, sem_weight_mid=0.7, lexical_anchor_weight=0.8),
    }


def categories(data_dir: Path, split: str) -> dict[str, str]:
    """query id → its category (SciFact: "claim")."""
    out: dict[str, str] = {}
    for ds in (load_locomo(data_dir, split=split), load_realmem(data_dir, split=split)):  # type: ignore[arg-type]
        out.update({q.query_id: q.category or "all" for q in ds.queries})
    out.update({q.query_id: "claim" for q in load_scifact(data_dir, split).queries})  # type: ignore[arg-type]
    return out


def per_query(
    queries: Sequence[fit.FitQuery], intents: dict[str, QueryIntent], rerank: Rerank
) -> list[dict[str, float]]:
    rows = []
    for q in queries:
        rel = rerank(q, intents[q.text])
        order = sorted(range(len(rel)), key=lambda i: (-rel[i], q.order_keys[i]))
        ranked = [q.features.ids[i] for i in order[:10]]
        rows.append(
            {
                "R@10": recall_at_k(ranked, q.relevant, 10),
                "nDCG@10": ndcg_at_k(ranked, q.relevant, 10),
                "MRR@10": reciprocal_rank(ranked, q.relevant, 10),
            }
        )
    return rows


def intents_for(queries: Sequence[fit.FitQuery], settings: Settings, cache: Path) -> dict[str, QueryIntent]:
    """Each query's detected intent, as ``--fit`` detects it for this encoder, cached beside the candidates."""
    if cache.is_file():
        got: dict[str, QueryIntent] = pickle.loads(cache.read_bytes())
        if all(q.text in got for q in queries):
            return got
    from brain_lab.eval.runner import eval_embedder, eval_query_embedder

    from brain_search.retrieval.intent.model import make_intent_detector

    queries_side = eval_query_embedder(settings, eval_embedder(settings))
    detector = make_intent_detector(settings.intent_model, settings.embedding_model)
    intents = fit.intents_of(queries, detector, queries_side.encode)
    cache.write_bytes(pickle.dumps(intents))
    return intents


def collect(settings: Settings, split: str, datasets: Sequence[str], out: Path) -> None:
    """The candidates of every ``split`` query, as ``--fit`` collects dev's (the eval indices built)."""
    from brain_lab.commands.eval import _runner
    from brain_lab.eval.runner import EvalOptions

    options = EvalOptions(parts=("retrieval",), datasets=tuple(datasets), splits=(split,))  # type: ignore[arg-type]
    with _runner(settings, options) as runner:
        for name in datasets:
            runner.load(name)
        queries = fit.collect(
            runner.client,
            runner.settings,
            runner.query_side,
            runner.data_dir,
            datasets,
            runner.progress,
            split=split,  # type: ignore[arg-type]
        )
    fit.save(queries, out)
    print(f"{len(queries)} {split} queries' candidates → {out}")


def report(
    queries: Sequence[fit.FitQuery],
    intents: dict[str, QueryIntent],
    cats: dict[str, str],
    names: Sequence[str],
    encoder: str,
) -> dict[str, object]:
    table = variants(encoder)
    scores = {n: per_query(queries, intents, by_params(table[n])) for n in ("minmax", "bm25", *names)}
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(queries):
        groups.setdefault(q.dataset, []).append(i)
        groups.setdefault(f"{q.dataset} / {cats.get(q.query_id, '?')}", []).append(i)
    out: dict[str, object] = {}
    for group in sorted(groups):
        idx = groups[group]
        print(f"\n{group} (n={len(idx)})")
        rows: dict[str, object] = {}
        for name in ("minmax", "bm25", *[n for n in names if n not in ("minmax", "bm25")]):
            cells = []
            row: dict[str, object] = {}
            for m in METRICS:
                v = [scores[name][i][m] for i in idx]
                best = max(("minmax", "bm25"), key=lambda b: mean(scores[b][i][m] for i in idx))
                ref = [scores[best][i][m] for i in idx]
                lo, hi = paired_interval(v, ref)
                row[m] = {"mean": mean(v), "vs": best, "delta": mean(v) - mean(ref), "interval": [lo, hi]}
                mark = "" if name in ("minmax", "bm25") else (" ✗" if hi < 0 else (" ✓" if lo > 0 else ""))
                cells.append(f"{mean(v):.3f} ({mean(v) - mean(ref):+.3f} [{lo:+.3f}, {hi:+.3f}] vs {best}){mark}")
            rows[name] = row
            print(f"  {name:<16}" + "  ".join(cells))
        out[group] = rows
    return out


def versus(
    mine: Sequence[fit.FitQuery],
    my_intents: dict[str, QueryIntent],
    my_ranking: RankingParams,
    other: Sequence[fit.FitQuery],
    other_intents: dict[str, QueryIntent],
    other_ranking: RankingParams,
    label: str,
) -> dict[str, object]:
    """Per dataset, the same queries ranked by two encoders' recalls (each its own candidates and
    ranking): this one's mean, the other's, and the 95 % paired-bootstrap interval of the difference."""
    a = dict(zip((q.query_id for q in mine), per_query(mine, my_intents, by_params(my_ranking)), strict=True))
    b = dict(zip((q.query_id for q in other), per_query(other, other_intents, by_params(other_ranking)), strict=True))
    out: dict[str, object] = {}
    for ds in sorted({q.dataset for q in mine}):
        ids = [q.query_id for q in mine if q.dataset == ds and q.query_id in b]
        cells, row = [], {}
        for m in METRICS:
            x, y = [a[i][m] for i in ids], [b[i][m] for i in ids]
            lo, hi = paired_interval(x, y)
            row[m] = {"mine": mean(x), "other": mean(y), "interval": [lo, hi]}
            cells.append(f"{m} {mean(x):.3f} vs {mean(y):.3f} ({mean(x) - mean(y):+.3f} [{lo:+.3f}, {hi:+.3f}])")
        print(f"{ds} (n={len(ids)}) against {label}: " + "; ".join(cells))
        out[ds] = row
    return out


def save(path: Path, encoder: str, split: str, groups: dict[str, object]) -> None:
    """A screen's figures as JSON: the encoder, the split and each group's rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"encoder": encoder, "split": split, "groups": groups}, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--candidates", type=Path, required=True)
    ap.add_argument("--collect-split", choices=("dev", "test"), default=None)
    ap.add_argument("--datasets", default="locomo,scifact,realmem")
    ap.add_argument("--index-prefix", default="bt-evalrun")
    ap.add_argument("--variants", default="brain")
    ap.add_argument("--split", choices=("dev", "test"), default="dev", help="the split the candidates are of")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--versus",
        default=None,
        help="ENCODER=CANDIDATES: compare this encoder's recall with that one's on the same queries",
    )
    args = ap.parse_args()
    settings = load_settings(index_prefix=args.index_prefix)
    datasets = [d for d in args.datasets.split(",") if d]
    if args.collect_split:
        collect(settings, args.collect_split, datasets, args.candidates)
        return
    queries = fit.load(args.candidates)
    intents = intents_for(queries, settings, args.candidates.with_suffix(".intents.pkl"))
    cats = categories(resolve_data_dir(settings), args.split)
    names = [n for n in args.variants.split(",") if n]
    if args.versus:
        encoder, path = args.versus.split("=", 1)
        other_settings = settings.model_copy(update={"embedding_model": encoder})
        other = fit.load(Path(path))
        other_intents = intents_for(other, other_settings, Path(path).with_suffix(".intents.pkl"))
        result = versus(
            queries,
            intents,
            ranking_for(settings.embedding_model, 1.0),
            other,
            other_intents,
            ranking_for(encoder, 1.0),
            encoder,
        )
    else:
        result = report(queries, intents, cats, names, settings.embedding_model)
    if args.json:
        save(args.json, settings.embedding_model, args.split, result)


if __name__ == "__main__":
    main()
