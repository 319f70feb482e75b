#!/usr/bin/env python
"""Refit the learned intent model from the dev rows of lab/data/intent_queries.jsonl.

    PYTHONPATH=. .venv/bin/python lab/scripts/fit_intent.py [--check] [--candidates PATH]
    PYTHONPATH=. .venv/bin/python lab/scripts/fit_intent.py --add-first-seen COMMIT

Encodes the dev queries with the fp32 query model, runs the forward-chaining validation of
``brain_lab.eval.intent_fit`` (each row's regex features as its first-seen detector gave them,
stored in lab/data/intent_first_seen.jsonl; no git history needed), chooses the regularisation and the hybrid
rule on it (the rule only among those that keep dev nDCG@10 at least the regex's on the
dev candidates stored by ``brain-search eval --fit``, ``--candidates PATH``, default
out/fit/dev-candidates.jsonl), fits on every dev row and writes the encoder's model
(``brain_search/data/intent_model.json`` for all-MiniLM-L6-v2, ``intent_model-<encoder>.json``
for another: ``BRAIN_EMBEDDING_MODEL``). Prints
the validation table and, for the chosen model, how often int8 query vectors (the API's default)
give the same tier as fp32 ones. Deterministic: the same rows give the same file. ``--check``
writes nothing and fails if the file on disk differs from the refit. Test rows are never read.

``--add-first-seen COMMIT`` fits nothing: it gives every dev row without a first-seen record one
from the current regex detector (COMMIT: the commit it is run at, ``git rev-parse --short HEAD``),
renumbers the others where lines moved, and rewrites lab/data/intent_first_seen.jsonl. Run it
when a new dev batch is committed, before anything changes ``brain_search/retrieval/intent/``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain_lab.eval.first_seen import (
    FIRST_SEEN_PATH,
    add_first_seen,
    dev_only,
    load_first_seen,
)
from brain_lab.eval.fit import load
from brain_lab.eval.intent_eval import load_labelled_queries
from brain_lab.eval.intent_fit import (
    NGRAM_MIN_COUNT,
    choose,
    choose_joint,
    cv_summary,
    cv_table,
    final_design,
    fit_final,
    forward_cv,
    pooled,
    pooled_rule,
    regex_baseline,
    retrieval_admissible,
)

from brain_search.config import load_settings
from brain_search.encoders.factory import make_query_embedder
from brain_search.retrieval.intent import analyze
from brain_search.retrieval.intent.model import HybridRule, combine, model_path_for
from brain_search.retrieval.score.ranking import RankingParams

# the dev candidates `brain-search eval --fit` stores: the retrieval check of each hybrid threshold
DEFAULT_CANDIDATES = ROOT / "out" / "fit" / "dev-candidates.jsonl"


def main() -> int:
    args = sys.argv[1:]
    if "--add-first-seen" in args:
        i = args.index("--add-first-seen")
        if i + 1 >= len(args) or args[i + 1].startswith("-"):
            print("--add-first-seen needs the commit it is run at (git rev-parse --short HEAD)", file=sys.stderr)
            return 2
        _, counts = add_first_seen(args[i + 1])
        print(f"{FIRST_SEEN_PATH.relative_to(ROOT)}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        return 0
    check = "--check" in args
    candidates = Path(args[args.index("--candidates") + 1]) if "--candidates" in args else DEFAULT_CANDIDATES
    settings = load_settings()
    model_path = model_path_for(settings.embedding_model)  # each encoder has its own model
    rows = dev_only(load_labelled_queries())
    texts = [q.query for q in rows]
    encoder = make_query_embedder(settings.model_copy(update={"query_embedding_int8": False}))
    fp32 = encoder.encode(texts)
    store = load_first_seen()  # every dev row's first-seen regex output, checked against the rows file
    cv = forward_cv(rows, fp32, store=store)
    for g in sorted(cv):
        print(f"l2={g}:", {k: round(v, 3) for k, v in pooled(cv[g]).items()})
    info = {
        "fitted_by": "lab/scripts/fit_intent.py",
        "embedding_model": f"{settings.embedding_model} (fp32 query encoder)",
        "features": (
            f"384-d query embedding + regex_features (of each row's first-seen detector) + n-grams held by"
            f" >= {NGRAM_MIN_COUNT} dev rows, standardised"
        ),
        "l2_grid": sorted(cv),
    }
    final = final_design(rows, fp32, store=store)
    models = {g: fit_final(final, g, info) for g in sorted(cv)}
    rules = list(cv[min(cv)][0].hybrid)
    retrieval: dict[str, object] = {"checked": False}
    if candidates.is_file():
        cands = load(candidates)
        ctexts = sorted({q.text for q in cands})
        vectors = dict(zip(ctexts, encoder.encode(ctexts), strict=True))
        admissible: dict[float, list[HybridRule]] = {}
        by_l2: dict[str, object] = {}
        params = RankingParams()  # the baseline and every model's rules ranked alike
        baseline = regex_baseline(cands, params)  # once for the whole l2 grid
        for g, m in models.items():
            base, by, admissible[g] = retrieval_admissible(cands, vectors, m, rules, params, baseline=baseline)
            by_l2[str(g)] = {rule.label: _round(r) for rule, r in by.items()}
        print(f"\ndev nDCG@10 (stored candidates, {len(cands)} queries): regex " + _fmt(base))
        for g in sorted(admissible):
            print(
                f"  l2={g} admissible: " + ", ".join(f"{r.label} ({pooled_rule(cv[g], r):.3f})" for r in admissible[g])
            )
        l2, rule = choose_joint(cv, admissible)
        retrieval = {
            "checked": True,
            "queries": len(cands),
            "regex": _round(base),
            "by_l2_and_rule": by_l2,
            "admissible": {str(g): [r.label for r in rs] for g, rs in admissible.items()},
        }
    else:
        print(f"\n{candidates} missing (run `brain-search eval --fit`): rule chosen without the retrieval check")
        l2, rule = choose(cv)
    model = models[l2]
    print(f"\nchosen l2={l2}, hybrid rule: {rule.label}\n")
    print(cv_table(cv[l2], rule))
    model = replace(
        model,
        provenance={
            **model.provenance,
            "min_probability": rule.min_probability,
            "keep_statements": rule.keep_statements,
            "keep_quoted": rule.keep_quoted,
            "rule_grid": [r.label for r in rules],
            "validation": cv_summary(cv[l2], rule),
            "dev_retrieval_nDCG@10": retrieval,
        },
    )
    int8 = make_query_embedder(settings.model_copy(update={"query_embedding_int8": True})).encode(texts)
    tiers = {}
    for name, vecs in (("fp32", fp32), ("int8", int8)):
        tiers[name] = [
            combine(q, qi, model.proba(model.featurize(q, qi, v))[0], rule).detected_intent
            for q, qi, v in ((q, analyze(q), v) for q, v in zip(texts, vecs, strict=True))
        ]
    agree = float(np.mean([a is b for a, b in zip(tiers["fp32"], tiers["int8"], strict=True)]))
    print(f"\nint8 vs fp32 query vectors: same tier on {agree:.4f} of {len(texts)} dev queries")
    text = json.dumps(model.to_json(), indent=1) + "\n"
    if check:
        shipped_json = json.loads(model_path.read_text()) if model_path.is_file() else {}
        if model_path.is_file() and model_path.read_text() == text:
            print("the shipped model matches the refit")
            return 0
        if same_model(shipped_json, json.loads(text)):
            # query vectors differ at rounding level between machines and library builds
            print(f"the shipped model matches the refit within {WEIGHT_TOLERANCE:g} (weights, rule, vocabulary);")
            print("  provenance figures that differ are listed below, for information")
            for line in model_differences(shipped_json, json.loads(text)):
                print(f"  {line}")
            return 0
        refit = ROOT / "out" / "fit" / "intent_model.refit.json"
        refit.parent.mkdir(parents=True, exist_ok=True)
        refit.write_text(text)
        print(f"the shipped model DIFFERS from the refit (written to {refit.relative_to(ROOT)}):")
        shipped = json.loads(model_path.read_text()) if model_path.is_file() else {}
        for line in model_differences(shipped, json.loads(text)):
            print(f"  {line}")
        return 1
    model_path.write_text(text)
    print(f"wrote {model_path.relative_to(ROOT)}")
    return 0


WEIGHT_TOLERANCE = 1e-6
MODEL_KEYS = ("tiers", "regex_features", "ngrams", "mean", "scale", "bias", "weights")
RULE_KEYS = ("l2", "min_probability", "keep_statements", "keep_quoted", "first_seen_sha256", "rows_sha256")


def same_model(shipped: dict[str, Any], refit: dict[str, Any]) -> bool:
    """The same classifier: every model key equal, numbers within ``WEIGHT_TOLERANCE``."""

    def close(a: Any, b: Any) -> bool:
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
        if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
            return abs(float(a) - float(b)) <= WEIGHT_TOLERANCE
        return bool(a == b)

    keys = [k for k in MODEL_KEYS if k in shipped or k in refit]
    sp, rp = shipped.get("provenance", {}), refit.get("provenance", {})
    rule = all(sp.get(k) == rp.get(k) for k in RULE_KEYS)
    return bool(keys) and rule and all(close(shipped.get(k), refit.get(k)) for k in keys)


def model_differences(shipped: dict[str, Any], refit: dict[str, Any], prefix: str = "") -> list[str]:
    """Where two model files differ: each differing key, with the largest gap of a numeric list."""
    out = []
    for key in sorted(set(shipped) | set(refit)):
        a, b, name = shipped.get(key), refit.get(key), f"{prefix}{key}"
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += model_differences(a, b, f"{name}.")
        elif a is not None and b is not None and _numeric(a) and _numeric(b) and np.shape(a) == np.shape(b):
            gap = float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))
            out.append(f"{name}: largest difference {gap:.3g}")
        else:
            out.append(f"{name}: {_short(a)} -> {_short(b)}")
    return out


def _numeric(v: object) -> bool:
    try:
        return np.asarray(v, dtype=float).size > 0
    except (TypeError, ValueError):
        return False


def _short(v: object, limit: int = 160) -> str:
    text = json.dumps(v)
    return text if len(text) <= limit else text[:limit] + "..."


def _round(r: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in r.items()}


def _fmt(r: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.5f}" for k, v in r.items())


if __name__ == "__main__":
    raise SystemExit(main())
