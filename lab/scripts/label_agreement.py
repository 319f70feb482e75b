#!/usr/bin/env python
"""How often do independent labellers agree with the original author's intent labels, and how does
the service's detector fare on the rows they all agree on?

    PYTHONPATH=. .venv/bin/python lab/scripts/label_agreement.py [--labels lab/data/intent_second_labels.jsonl]
    PYTHONPATH=. .venv/bin/python lab/scripts/label_agreement.py --labels lab/data/intent_test2_second_labels.jsonl

The original author wrote and labelled 239 rows, split at random into 144 dev and 95 test rows;
four writers wrote the 394 test-2 rows. Second labellers relabelled each set, shuffled, from the
label guide and the spec alone (no labelled row, no split, no code; ``lab/data/README.md``).
"author" below is whoever wrote the row. This prints, per split and writer group, each
labeller's agreement with the author (accuracy, within one tier, Cohen's kappa), the labellers'
agreement with each other, the service's agreement with each of them, and the service's accuracy
on the rows where the author and every labeller agree. The service's detector encodes each query
as the API does (``load_settings()``: the int8 query model unless ``BRAIN_QUERY_EMBEDDING_INT8=0``).
Aggregates only: no test row is printed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain_lab.eval.agreement import (
    DEFAULT_SECOND_LABELS,
    agreement,
    confusion,
    load_second_labels,
    unanimous,
)
from brain_lab.eval.intent_eval import TIERS, group_of_source, project_detector

from brain_search.config import load_settings
from brain_search.encoders.factory import make_query_embedder


def fmt(name: str, a: Sequence[str], b: Sequence[str]) -> str:
    g = agreement(a, b)
    return f"  {name:<30} n={g.n:<4} same {g.accuracy:.3f}  within one {g.within_one:.3f}  kappa {g.kappa:.3f}"


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=DEFAULT_SECOND_LABELS)
    args = parser.parse_args(argv)
    second = load_second_labels(args.labels)
    names = list(second.labels)
    settings = load_settings()
    embedder = make_query_embedder(settings)
    detect = project_detector(embedder.encode)
    service = [detect(r["query"]) for r in second.rows]
    encoder = "int8" if settings.query_embedding_int8 else "fp32"
    print(f"{len(second.rows)} rows, labellers {', '.join(names)}; the service's detector, {encoder} query vectors")
    keys = [(r["split"], group_of_source(r.get("source"))) for r in second.rows]
    for split, part in sorted(set(keys), key=lambda g: (g[1], g[0])):
        title = f"{part} {split} rows" + (" (held out)" if split == "test" else "")
        idx = [i for i, key in enumerate(keys) if key == (split, part)]
        au = [second.rows[i]["label"] for i in idx]
        sv = [service[i] for i in idx]
        theirs = {k: [second.labels[k][i] for i in idx] for k in names}
        print(f"\n{title}:")
        for k in names:
            unsure = sum(not second.sure[k][i] for i in idx)
            print(fmt(f"labeller {k} vs author", theirs[k], au) + f"  (close calls: {unsure})")
        for i, k in enumerate(names):
            for j in names[i + 1 :]:
                print(fmt(f"labeller {k} vs labeller {j}", theirs[k], theirs[j]))
        print(fmt("service vs author", sv, au))
        for k in names:
            print(fmt(f"service vs labeller {k}", sv, theirs[k]))
        agreed = unanimous(au, *theirs.values())
        on = [s == a for s, a, ok in zip(sv, au, agreed, strict=True) if ok]
        off = [s == a for s, a, ok in zip(sv, au, agreed, strict=True) if not ok]
        print(
            f"  author and every labeller agree on {len(on)}/{len(idx)} rows: service {sum(on)}/{len(on)}"
            f" = {np.mean(on) if on else 0:.3f}; on the other {len(off)}: service {sum(off)}/{len(off)}"
        )
        m = confusion(au * len(names), [label for k in names for label in theirs[k]])
        print("  author (rows) × labellers (columns), every labeller pooled:")
        print("  " + " ".join(f"{t[:5]:>6}" for t in ("", *TIERS)))
        for t, row in zip(TIERS, m, strict=True):
            print("  " + f"{t[:5]:>6} " + " ".join(f"{c:>6}" for c in row))


if __name__ == "__main__":
    main(sys.argv[1:])
