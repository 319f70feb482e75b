#!/usr/bin/env python
"""Refit the learned intent model from the dev rows of tests/data/intent_queries.jsonl.

    PYTHONPATH=. .venv/bin/python scripts/fit_intent.py [--check]

Encodes the dev queries with the fp32 query model, runs the forward-chaining validation of
``brain_search.eval.intent_fit`` (needs the git history), chooses the regularisation and the hybrid
threshold on it, fits on every dev row and writes ``brain_search/data/intent_model.json``. Prints
the validation table and, for the chosen model, how often int8 query vectors (the API's default)
give the same tier as fp32 ones. Deterministic: the same rows give the same file. ``--check``
writes nothing and fails if the file on disk differs from the refit. Test rows are never read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from brain_search.config import load_settings  # noqa: E402
from brain_search.embedding import make_query_embedder  # noqa: E402
from brain_search.eval.intent_eval import load_labelled_queries  # noqa: E402
from brain_search.eval.intent_fit import (  # noqa: E402
    choose,
    cv_summary,
    cv_table,
    dev_only,
    fit_final,
    forward_cv,
    pooled,
)
from brain_search.intent import analyze  # noqa: E402
from brain_search.intent_model import DEFAULT_MODEL_PATH, HybridRule, combine, features  # noqa: E402


def main() -> int:
    check = "--check" in sys.argv[1:]
    settings = load_settings()
    rows = dev_only(load_labelled_queries())
    texts = [q.query for q in rows]
    fp32 = make_query_embedder(settings.model_copy(update={"query_embedding_int8": False})).encode(texts)
    cv = forward_cv(rows, fp32)
    l2, threshold = choose(cv)
    for g in sorted(cv):
        print(f"l2={g}:", {k: round(v, 3) for k, v in pooled(cv[g]).items()})
    print(f"\nchosen l2={l2}, hybrid threshold={threshold}\n")
    print(cv_table(cv[l2], threshold))
    model = fit_final(
        rows,
        fp32,
        l2,
        threshold,
        {
            "fitted_by": "scripts/fit_intent.py",
            "embedding_model": f"{settings.embedding_model} (fp32 query encoder)",
            "features": "384-d query embedding + regex_features, standardised",
            "l2_grid": sorted(cv),
            "threshold_grid": list(cv[l2][0].hybrid),
            "validation": cv_summary(cv[l2], threshold),
        },
    )
    int8 = make_query_embedder(settings.model_copy(update={"query_embedding_int8": True})).encode(texts)
    rule = HybridRule(threshold)
    tiers = {}
    for name, vecs in (("fp32", fp32), ("int8", int8)):
        tiers[name] = [
            combine(qi, model.proba(features(q, qi, v))[0], rule).detected_intent
            for q, qi, v in ((q, analyze(q), v) for q, v in zip(texts, vecs, strict=True))
        ]
    agree = float(np.mean([a is b for a, b in zip(tiers["fp32"], tiers["int8"], strict=True)]))
    print(f"\nint8 vs fp32 query vectors: same tier on {agree:.4f} of {len(texts)} dev queries")
    text = json.dumps(model.to_json(), indent=1) + "\n"
    if check:
        same = DEFAULT_MODEL_PATH.is_file() and DEFAULT_MODEL_PATH.read_text() == text
        print("the shipped model matches the refit" if same else "the shipped model DIFFERS from the refit")
        return 0 if same else 1
    DEFAULT_MODEL_PATH.write_text(text)
    print(f"wrote {DEFAULT_MODEL_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
