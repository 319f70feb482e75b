"""Intent-detection accuracy on the labelled queries the project keeps in ``tests/data/``.

The tiers are ordered exact < precise < balanced < conceptual < broad (Z from 0 to 1), so besides
accuracy we report within-one-tier accuracy (a detection next to the label still moves Z the
right way) and the full confusion matrix, per split (patterns are tuned on dev, reported on test).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TIERS = ("exact", "precise", "balanced", "conceptual", "broad")
TIER_INDEX = {t: i for i, t in enumerate(TIERS)}
DEFAULT_QUERIES = Path(__file__).resolve().parents[2] / "tests" / "data" / "intent_queries.jsonl"


@dataclass(frozen=True)
class LabelledQuery:
    query: str
    label: str
    split: str
    note: str | None = None
    source: str | None = None
    """None: the original stratified 60/40 set; otherwise who added the row (dev-only additions)."""
    batch: str | None = None
    """The dev-extra batch the row was written in ("1-3", "4", … "17"; tests/data/README.md)."""


def load_labelled_queries(path: Path = DEFAULT_QUERIES) -> list[LabelledQuery]:
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in TIERS or row.get("split") not in ("dev", "test"):
            raise ValueError(f"{path}:{n}: label must be one of {TIERS} and split dev|test")
        rows.append(
            LabelledQuery(
                row["query"], row["label"], row["split"], row.get("note"), row.get("source"), row.get("batch")
            )
        )
    return rows


@dataclass
class IntentResult:
    split: str
    n: int
    accuracy: float
    within_one: float
    confusion: list[list[int]]
    """rows: label (TIERS order), columns: detected."""
    per_label_recall: dict[str, float]
    errors: list[tuple[str, str, str]] = field(default_factory=list)
    """(query, label, detected) for every miss."""


def evaluate_intents(queries: Sequence[LabelledQuery], detect: Callable[[str], str], split: str) -> IntentResult:
    """Accuracy, within-one-tier accuracy and confusion of ``detect`` (query → tier name)."""
    sel = [q for q in queries if split in ("all", q.split)]
    idx = TIER_INDEX
    confusion = [[0] * len(TIERS) for _ in TIERS]
    correct = near = 0
    errors = []
    for q in sel:
        got = str(detect(q.query))
        if got not in idx:
            raise ValueError(f"detector returned {got!r}, not one of {TIERS}")
        confusion[idx[q.label]][idx[got]] += 1
        correct += got == q.label
        near += abs(idx[got] - idx[q.label]) <= 1
        if got != q.label:
            errors.append((q.query, q.label, got))
    n = len(sel)
    recall = {t: (confusion[i][i] / sum(confusion[i]) if sum(confusion[i]) else 0.0) for t, i in idx.items()}
    return IntentResult(split, n, correct / n if n else 0.0, near / n if n else 0.0, confusion, recall, errors)


def project_detector(
    encode: Callable[[Sequence[str]], np.ndarray] | None, learned: bool = True
) -> Callable[[str], str]:
    """The service's detector as query → tier name: ``make_intent_detector(learned)`` given the
    query's vector from ``encode`` (texts → vectors), as ``Retriever.plan`` gives it. ``encode``
    None: no vector, i.e. the regex alone."""
    from brain_search.intent_model import make_intent_detector

    detector = make_intent_detector(learned)

    def detect(query: str) -> str:
        vector = encode([query])[0] if encode is not None else None
        return str(detector.analyze(query, vector).detected_intent.value)

    return detect
