"""Intent-detection accuracy on the labelled queries the project keeps in ``tests/data/``.

The tiers are ordered exact < precise < balanced < conceptual < broad (Z from 0 to 1), so besides
accuracy we report within-one-tier accuracy (a detection next to the label still moves Z the
right way) and the full confusion matrix, per split (patterns are tuned on dev, reported on test).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from brain_lab.paths import DATA

TIERS = ("exact", "precise", "balanced", "conceptual", "broad")
TIER_INDEX = {t: i for i, t in enumerate(TIERS)}
DEFAULT_QUERIES = DATA / "intent_queries.jsonl"


@dataclass(frozen=True)
class LabelledQuery:
    query: str
    label: str
    split: str
    note: str | None = None
    source: str | None = None
    """None: the original stratified 60/40 set; otherwise who added the row: "dev-extra" (dev
    only, for tuning) or "test-2" (test only, held out; lab/data/README.md)."""
    batch: str | None = None
    """The batch the row was written in (dev-extra "1-3", "4", … "23"; test-2 "T1" … "T4")."""


ORIGINAL = "original"
SOURCE_SPLIT = {"dev-extra": "dev", "test-2": "test"}
"""Each later addition's only split: tuning rows never reach test, held-out rows never dev."""


def group_of_source(source: str | None) -> str:
    """Who wrote a row with this ``source``: ``ORIGINAL`` (the stratified 60/40 set) or the source."""
    return ORIGINAL if source is None else source


def part_of(q: LabelledQuery) -> str:
    return group_of_source(q.source)


def load_labelled_queries(path: Path = DEFAULT_QUERIES) -> list[LabelledQuery]:
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in TIERS or row.get("split") not in ("dev", "test"):
            raise ValueError(f"{path}:{n}: label must be one of {TIERS} and split dev|test")
        source = row.get("source")
        if source is not None and SOURCE_SPLIT.get(source) != row["split"]:
            raise ValueError(f"{path}:{n}: source must be one of {SOURCE_SPLIT} with its split ({source!r})")
        rows.append(
            LabelledQuery(
                row["query"], row["label"], row["split"], row.get("note"), row.get("source"), row.get("batch")
            )
        )
    return rows


@dataclass(frozen=True)
class PartScore:
    """One writer group's share of a split (``part_of``), or one of its batches."""

    group: str
    batch: str | None
    """None: the whole group"""
    n: int
    correct: int
    near: int

    @property
    def part(self) -> str:
        return self.group if self.batch is None else f"{self.group} {self.batch}"

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    @property
    def within_one(self) -> float:
        return self.near / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.correct, self.n)


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
    parts: list[PartScore] = field(default_factory=list)
    """Per writer group when the split holds more than one: each group, then (``batches``) each of
    its batches when it has several."""

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(sum(self.confusion[i][i] for i in range(len(TIERS))), self.n)


def evaluate_intents(
    queries: Sequence[LabelledQuery], detect: Callable[[str], str], split: str, batches: bool = False
) -> IntentResult:
    """Accuracy, within-one-tier accuracy and confusion of ``detect`` (query → tier name); per writer
    group too when the split holds several, and per batch of a group with ``batches``."""
    sel = [q for q in queries if split in ("all", q.split)]
    idx = TIER_INDEX
    confusion = [[0] * len(TIERS) for _ in TIERS]
    correct = near = 0
    errors = []
    # (writer group, batch or None) → [rows, correct, within one tier]
    tally: dict[tuple[str, str | None], list[int]] = {}
    for q in sel:
        got = str(detect(q.query))
        if got not in idx:
            raise ValueError(f"detector returned {got!r}, not one of {TIERS}")
        confusion[idx[q.label]][idx[got]] += 1
        correct += got == q.label
        near += abs(idx[got] - idx[q.label]) <= 1
        if got != q.label:
            errors.append((q.query, q.label, got))
        for key in {(part_of(q), None), (part_of(q), q.batch)}:
            t = tally.setdefault(key, [0, 0, 0])
            t[0] += 1
            t[1] += got == q.label
            t[2] += abs(idx[got] - idx[q.label]) <= 1
    n = len(sel)
    recall = {t: (confusion[i][i] / sum(confusion[i]) if sum(confusion[i]) else 0.0) for t, i in idx.items()}
    result = IntentResult(split, n, correct / n if n else 0.0, near / n if n else 0.0, confusion, recall, errors)
    groups = sorted({g for g, _ in tally}, key=lambda g: (g != ORIGINAL, g))
    if len(groups) > 1:
        for g in groups:
            result.parts.append(PartScore(g, None, *tally[g, None]))
            names = sorted(b for h, b in tally if h == g and b is not None)
            if batches and len(names) > 1:
                result.parts += [PartScore(g, b, *tally[g, b]) for b in names]
    return result


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a proportion (``successes`` of ``n``): unlike p ± z·se it stays
    inside [0, 1] and keeps its coverage near 0 and 1 and for small ``n``."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError("wilson_interval needs 0 <= successes <= n and n > 0")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def project_detector(
    encode: Callable[[Sequence[str]], np.ndarray] | None, learned: bool = True, encoder: str = "all-MiniLM-L6-v2"
) -> Callable[[str], str]:
    """The service's detector as query → tier name: ``make_intent_detector(learned)`` given the
    query's vector from ``encode`` (texts → vectors), as ``Retriever.plan`` gives it. ``encode``
    None: no vector, i.e. the regex alone."""
    from brain_search.retrieval.intent.model import make_intent_detector

    detector = make_intent_detector(learned, encoder)

    def detect(query: str) -> str:
        vector = encode([query])[0] if encode is not None else None
        return str(detector.analyze(query, vector).detected_intent.value)

    return detect
