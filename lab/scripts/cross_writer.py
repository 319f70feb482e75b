#!/usr/bin/env python
"""How well does the learned intent model meet the original author's phrasing when no training row
was written by someone who had read that author's rows?

    PYTHONPATH=. .venv/bin/python lab/scripts/cross_writer.py [--blind 13,14,22,23] [--repeats 3]

The 95 test rows and the 144 original dev rows were written by one author and split at random, so
the original dev rows are the only dev rows drawn like the test rows. Most dev-extra batches were
written by people who had read those 144 rows (``lab/data/README.md``), which may leak their
phrasing into training and flatter any estimate on them. This trains the model (l2 1, the service's
features) on three sets of dev-extra rows and scores it on the 144 original dev rows:

- the batches whose writers read no labelled row (``--blind``; by default 13, 14, 22 and 23);
- the other dev-extra batches, subsampled to the same size (``--repeats`` draws, averaged);
- every dev-extra batch.

Each with and without the regex features: the regex was written on the original rows, so its
features on them are in-sample and only the column without them is a fair estimate. Dev rows only;
test rows are never read. About two minutes on two cores.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain_lab.eval.first_seen import (
    FirstSeen,
    dev_only,
    group_of,
    load_first_seen,
)
from brain_lab.eval.intent_eval import LabelledQuery, load_labelled_queries
from brain_lab.eval.intent_fit import (
    NGRAM_MIN_COUNT,
    ORIGINAL,
    design,
)

from brain_search.config import load_settings
from brain_search.encoders.factory import make_query_embedder
from brain_search.retrieval.intent.model import REGEX_FEATURES, fit_softmax, ngram_vocab

L2 = 1.0


def accuracies(
    rows: Sequence[LabelledQuery],
    vectors: np.ndarray,
    seen: Sequence[FirstSeen],
    train: Sequence[int],
    test: Sequence[int],
) -> tuple[float, float]:
    """Accuracy on ``test`` of the model fitted on ``train``: without the regex features, then with them."""
    vocab = ngram_vocab((rows[i].query for i in train), NGRAM_MIN_COUNT)
    d_train = design([rows[i] for i in train], vectors[list(train)], [seen[i] for i in train], vocab)
    d_test = design([rows[i] for i in test], vectors[list(test)], [seen[i] for i in test], vocab)
    start = vectors.shape[1]  # features are [vector | regex | n-grams]
    out = []
    for with_regex in (False, True):
        x_train, x_test = d_train.x.copy(), d_test.x.copy()
        if not with_regex:
            x_train[:, start : start + len(REGEX_FEATURES)] = 0
            x_test[:, start : start + len(REGEX_FEATURES)] = 0
        probs = fit_softmax(x_train, d_train.y, L2).proba(x_test)
        out.append(float(np.mean(probs.argmax(axis=1) == d_test.y)))
    return out[0], out[1]


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blind", default="13,14,22,23", help="batches whose writers read no labelled row")
    parser.add_argument("--repeats", type=int, default=3, help="subsamples of the other batches")
    args = parser.parse_args(argv)
    blind_groups = {f"batch {b.strip()}" for b in args.blind.split(",") if b.strip()}

    rows = dev_only(load_labelled_queries())
    groups = [group_of(q) for q in rows]
    unknown = blind_groups - set(groups)
    if unknown:
        raise SystemExit(f"no dev rows in {', '.join(sorted(unknown))}")
    original = [i for i, g in enumerate(groups) if g == ORIGINAL]
    blind = [i for i, g in enumerate(groups) if g in blind_groups]
    others = [i for i, g in enumerate(groups) if g != ORIGINAL and g not in blind_groups]
    print(f"original dev rows {len(original)}, blind writers {len(blind)}, others {len(others)}", flush=True)

    settings = load_settings()
    embedder = make_query_embedder(settings.model_copy(update={"query_embedding_int8": False}))
    vectors = np.asarray(embedder.encode([q.query for q in rows]))
    seen = load_first_seen().of(rows)  # each row's regex output as first seen (stored)

    rng = random.Random(20261201)
    draws = [rng.sample(others, len(blind)) for _ in range(args.repeats)]
    trainings = {
        f"blind writers only (n={len(blind)})": [blind],
        f"other writers, subsampled (n={len(blind)}, {args.repeats} draws)": draws,
        f"every dev-extra row (n={len(blind) + len(others)})": [blind + others],
    }
    print("accuracy on the original dev rows: without regex features (fair) | with them (in-sample)")
    for name, sets in trainings.items():
        fair, insample = np.mean([accuracies(rows, vectors, seen, t, original) for t in sets], axis=0)
        print(f"  {name}: {fair:.3f} | {insample:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
