"""Agreement between labellers of the intent queries: how far a second person reading the same
query and the same label guide picks the same tier. It bounds what any detector can score against
one author's labels, and tells label noise apart from detector error.

Pure functions over label sequences (tier names, ``TIERS`` order: exact < … < broad).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from brain_lab.eval.intent_eval import DEFAULT_QUERIES, TIER_INDEX, TIERS

DEFAULT_SECOND_LABELS = DEFAULT_QUERIES.parent / "intent_second_labels.jsonl"


def _indices(labels: Sequence[str]) -> list[int]:
    try:
        return [TIER_INDEX[label] for label in labels]
    except KeyError as e:
        raise ValueError(f"label {e.args[0]!r} is not one of {TIERS}") from None


@dataclass(frozen=True)
class Agreement:
    n: int
    accuracy: float
    """share of rows with the same label"""
    within_one: float
    """share of rows at most one tier apart"""
    kappa: float
    """Cohen's kappa: agreement beyond what the two label distributions give by chance"""


def agreement(a: Sequence[str], b: Sequence[str]) -> Agreement:
    """How often ``a`` and ``b`` (one label each per row) agree."""
    if len(a) != len(b):
        raise ValueError("one label from each side per row")
    if not a:
        raise ValueError("no rows")
    ia, ib = _indices(a), _indices(b)
    n = len(ia)
    same = sum(x == y for x, y in zip(ia, ib, strict=True)) / n
    near = sum(abs(x - y) <= 1 for x, y in zip(ia, ib, strict=True)) / n
    chance = sum((ia.count(k) / n) * (ib.count(k) / n) for k in range(len(TIERS)))
    kappa = (same - chance) / (1 - chance) if chance < 1 else 1.0
    return Agreement(n, same, near, kappa)


def confusion(a: Sequence[str], b: Sequence[str]) -> list[list[int]]:
    """Rows: ``a``'s label, columns: ``b``'s (``TIERS`` order)."""
    if len(a) != len(b):
        raise ValueError("one label from each side per row")
    out = [[0] * len(TIERS) for _ in TIERS]
    for x, y in zip(_indices(a), _indices(b), strict=True):
        out[x][y] += 1
    return out


def unanimous(*sides: Sequence[str]) -> list[bool]:
    """Per row: do all sides give the same label?"""
    if len({len(s) for s in sides}) > 1:
        raise ValueError("one label from each side per row")
    return [len(set(row)) == 1 for row in zip(*sides, strict=True)]


@dataclass(frozen=True)
class SecondLabels:
    """The relabelled rows of ``intent_queries.jsonl`` and each labeller's labels of them."""

    lines: list[int]
    """1-based line numbers in the queries file, ascending"""
    rows: list[dict]
    """those lines of the queries file (query, label = the author's, split, …)"""
    labels: dict[str, list[str]]
    """labeller → one label per row"""
    sure: dict[str, list[bool]]
    """labeller → per row, false where the labeller found it a close call"""


def load_second_labels(path: Path = DEFAULT_SECOND_LABELS, queries: Path = DEFAULT_QUERIES) -> SecondLabels:
    """Rows ``{"line", "labeller", "label", "sure", "query"}``: every labeller labels the same lines
    once each, and each row's query must be that line's query (so an edit of the queries file that
    moves or changes a row is caught)."""
    lines = queries.read_text().splitlines()
    by: dict[str, dict[int, dict]] = {}
    for n, text in enumerate(path.read_text().splitlines(), start=1):
        if not text.strip():
            continue
        row = json.loads(text)
        where = f"{path.name}:{n}"
        line = int(row["line"])
        if not 1 <= line <= len(lines) or json.loads(lines[line - 1])["query"] != row["query"]:
            raise ValueError(f"{where}: the query is not line {line} of {queries.name}")
        if row["label"] not in TIER_INDEX:
            raise ValueError(f"{where}: label {row['label']!r} is not one of {TIERS}")
        if line in by.setdefault(row["labeller"], {}):
            raise ValueError(f"{where}: labeller {row['labeller']} labels line {line} twice")
        by[row["labeller"]][line] = row
    if not by:
        raise ValueError(f"{path.name}: no labels")
    covered = {frozenset(rows) for rows in by.values()}
    if len(covered) != 1:
        raise ValueError(f"{path.name}: the labellers did not label the same lines")
    order = sorted(next(iter(covered)))
    return SecondLabels(
        order,
        [json.loads(lines[i - 1]) for i in order],
        {k: [rows[i]["label"] for i in order] for k, rows in sorted(by.items())},
        {k: [bool(rows[i].get("sure", True)) for i in order] for k, rows in sorted(by.items())},
    )
