#!/usr/bin/env python
"""Score new dev-extra intent batches as first seen: the regex and the service's detector.

    PYTHONPATH=. .venv/bin/python lab/scripts/first_seen.py BATCH [BATCH ...] [--model PATH]

Commit the batch's rows to lab/data/intent_queries.jsonl before running this, and run it before
the model is refitted on them: the figure is the honest estimate of accuracy on phrasings nobody
tuned for only while neither the regex nor the model has seen the rows. Reads the dev rows of the
named batches only (never a test row), encodes them as the service does (``load_settings()``: int8
query vectors unless configured otherwise, one query at a time) and prints, per batch and for all
together, the accuracy of the regex alone and of the service (regex + learned model with the model
file's own hybrid rule), with the hits per label.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain_lab.eval.intent_eval import LabelledQuery, load_labelled_queries

from brain_search.config import load_settings
from brain_search.encoders.factory import make_query_embedder
from brain_search.models import Intent
from brain_search.retrieval.intent import analyze
from brain_search.retrieval.intent.model import DEFAULT_MODEL_PATH, LearnedIntentDetector


def line(name: str, rows: Sequence[LabelledQuery], regex: Sequence[str], service: Sequence[str]) -> str:
    n = len(rows)
    rx = sum(p == q.label for p, q in zip(regex, rows, strict=True))
    sv = [p == q.label for p, q in zip(service, rows, strict=True)]
    hits = Counter(q.label for q, ok in zip(rows, sv, strict=True) if ok)
    total = Counter(q.label for q in rows)
    per = ", ".join(f"{t.value} {hits[t.value]}/{total[t.value]}" for t in Intent if total[t.value])
    return f"{name}: n={n} regex {rx / n:.3f} service {sum(sv) / n:.3f} ({sum(sv)}/{n}; {per})"


def main() -> int:
    args = sys.argv[1:]
    model = DEFAULT_MODEL_PATH
    if "--model" in args:
        i = args.index("--model")
        model = Path(args[i + 1])
        del args[i : i + 2]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    rows = [q for q in load_labelled_queries() if q.split == "dev" and q.batch in args]
    found = {q.batch for q in rows}
    if missing := [b for b in args if b not in found]:
        print(f"no dev rows for batch {', '.join(missing)} in lab/data/intent_queries.jsonl", file=sys.stderr)
        return 2
    detector = LearnedIntentDetector(model)
    trained = set(detector.model.provenance.get("validation", {}).get("groups", {}))
    if seen := sorted(b for b in args if f"batch {b}" in trained):
        print(f"warning: the model was fitted on batch {', '.join(seen)}: not a first-seen figure", file=sys.stderr)
    encoder = make_query_embedder(load_settings())
    # one query at a time, as the service encodes them (int8 activations are scaled per batch)
    vectors = [encoder.encode([q.query])[0] for q in rows]
    regex = [analyze(q.query).detected_intent.value for q in rows]
    service = [detector.analyze(q.query, v).detected_intent.value for q, v in zip(rows, vectors, strict=True)]
    rows_fitted = detector.model.provenance.get("rows")
    print(f"model {model.name}: {rows_fitted} training rows, rule {detector.hybrid_rule().label}")
    for b in args:
        idx = [i for i, q in enumerate(rows) if q.batch == b]
        print(line(f"batch {b}", [rows[i] for i in idx], [regex[i] for i in idx], [service[i] for i in idx]))
    if len(args) > 1:
        print(line("all", rows, regex, service))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
