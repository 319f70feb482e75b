"""Fit and validate the learned intent model (``brain_search.intent_model``) on the dev rows only.

Why the validation looks back in history: the regex detector of today was tuned on every dev row,
so on any dev group it looks near perfect (0.99) and a model fed its output learns to trust it;
held-out dev rows cannot show how either meets a new phrasing. So each dev-extra batch is
predicted the way it was first met: with the detector as it was before that batch was written
(``HISTORY``: the commit whose ``brain_search/intent.py`` first saw it, read with ``git show``) and a
model trained only on the groups written before it, with that same detector's features. That is
forward-chaining validation; its regex column reproduces the first-seen figures of
``tests/data/README.md``. The regularisation and the hybrid threshold are chosen on it (a small
grid), then the model is fitted on every dev row with today's detector. Test rows are never read.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from brain_search.eval.intent_eval import LabelledQuery
from brain_search.intent import CUES, QueryIntent, analyze
from brain_search.intent_model import (
    TIERS,
    CueTable,
    HybridRule,
    IntentModel,
    combine,
    cue_table,
    features,
    fit_softmax,
)

L2_GRID = (0.3, 1.0, 3.0, 10.0, 30.0)
THRESHOLD_GRID = (0.0, 0.4, 0.5)
TIER_INDEX = {t.value: i for i, t in enumerate(TIERS)}
ORIGINAL = "original"
# dev group → the commit whose brain_search/intent.py met it first (the parent of the commit that
# added the rows, or the commit named in tests/data/README.md); groups in the order written
HISTORY: tuple[tuple[str, str], ...] = (
    ("batch 1-3", "76c0bae"),
    ("batch 4", "07a2185"),
    ("batch 5", "a6fae77"),
    ("batch 6", "a6fae77"),
    ("batch 7", "a9080d5"),
    ("batch 8", "fc1a70b"),
)
REPO_ROOT = Path(__file__).resolve().parents[2]


def dev_only(rows: Sequence[LabelledQuery]) -> list[LabelledQuery]:
    return [q for q in rows if q.split == "dev"]


def group_of(q: LabelledQuery) -> str:
    """``ORIGINAL`` (the stratified dev rows) or "batch <n>" (a dev-extra batch)."""
    if q.source is None:
        return ORIGINAL
    return f"batch {q.batch}" if q.batch else str(q.source)


def rows_hash(rows: Sequence[LabelledQuery]) -> str:
    """sha256 of the rows' query, label and group, in order: what the model was fitted on."""
    h = hashlib.sha256()
    for q in rows:
        h.update(json.dumps([q.query, q.label, group_of(q)], ensure_ascii=False).encode() + b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class Detector:
    """A regex detector, today's or a historical one: ``analyze`` and its cue table."""

    analyze: Callable[[str], QueryIntent]
    table: CueTable


def current_detector() -> Detector:
    return Detector(analyze, cue_table(CUES))


def historical_detector(commit: str, repo: Path = REPO_ROOT) -> Detector:
    """``brain_search/intent.py`` as of ``commit`` (needs the git history), as a module of its own."""
    src = subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:brain_search/intent.py"], capture_output=True, text=True, check=True
    ).stdout
    name = f"_brain_search_intent_{commit}"
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(src, f"{commit}:brain_search/intent.py", "exec"), module.__dict__)
    return Detector(module.analyze, cue_table(module.CUES))


@dataclass(frozen=True)
class Design:
    x: np.ndarray
    y: np.ndarray
    regex: list[QueryIntent]


def design(rows: Sequence[LabelledQuery], vectors: np.ndarray, detector: Detector) -> Design:
    if len(rows) != len(vectors):
        raise ValueError("one vector per row")
    regex = [detector.analyze(q.query) for q in rows]
    x = np.stack([features(q.query, r, v, detector.table) for q, r, v in zip(rows, regex, vectors, strict=True)])
    return Design(x, np.array([TIER_INDEX[q.label] for q in rows]), regex)


@dataclass(frozen=True)
class GroupScore:
    group: str
    n: int
    trained_on: int
    regex: float
    learned: float
    hybrid: dict[float, float]  # threshold → accuracy


def score_group(
    d: Design, train: np.ndarray, test: np.ndarray, l2: float, thresholds: Sequence[float]
) -> tuple[float, float, dict[float, float]]:
    """Accuracy on ``test`` of the regex, the model fitted on ``train``, and each hybrid."""
    model = fit_softmax(d.x[train], d.y[train], l2)
    probs = model.proba(d.x[test])
    y = d.y[test]
    regex = np.array([TIER_INDEX[d.regex[i].detected_intent.value] for i in test])
    hybrid = {}
    for t in thresholds:
        tiers = [combine(d.regex[i], p, HybridRule(t)).detected_intent.value for i, p in zip(test, probs, strict=True)]
        hybrid[t] = float(np.mean(np.array([TIER_INDEX[v] for v in tiers]) == y))
    return float(np.mean(regex == y)), float(np.mean(probs.argmax(axis=1) == y)), hybrid


def forward_cv(
    rows: Sequence[LabelledQuery],
    vectors: np.ndarray,
    l2_grid: Sequence[float] = L2_GRID,
    thresholds: Sequence[float] = THRESHOLD_GRID,
    history: Sequence[tuple[str, str]] = HISTORY,
    load: Callable[[str], Detector] = historical_detector,
) -> dict[float, list[GroupScore]]:
    """Each group of ``history`` predicted by its first-seen detector and a model trained on the
    groups before it (``ORIGINAL`` first). Returns the scores per l2."""
    groups = np.array([group_of(q) for q in rows])
    order = [ORIGINAL, *(g for g, _ in history)]
    out: dict[float, list[GroupScore]] = {l2: [] for l2 in l2_grid}
    for i, (group, commit) in enumerate(history):
        d = design(rows, vectors, load(commit))
        train = np.flatnonzero(np.isin(groups, order[: i + 1]))
        test = np.flatnonzero(groups == group)
        for l2 in l2_grid:
            regex, learned, hybrid = score_group(d, train, test, l2, thresholds)
            out[l2].append(GroupScore(group, len(test), len(train), regex, learned, hybrid))
    return out


def pooled(scores: Sequence[GroupScore]) -> dict[str, float]:
    """Accuracy over every held-out row (groups weighted by size)."""
    n = sum(s.n for s in scores)
    out = {"regex": sum(s.regex * s.n for s in scores) / n, "learned": sum(s.learned * s.n for s in scores) / n}
    for t in scores[0].hybrid:
        out[f"hybrid@{t}"] = sum(s.hybrid[t] * s.n for s in scores) / n
    return out


def choose(cv: dict[float, list[GroupScore]]) -> tuple[float, float]:
    """(l2, threshold) with the best pooled hybrid accuracy; ties: the stronger penalty, then the
    higher threshold (fewer changes to the regex's answer)."""
    keys = [(l2, t) for l2, scores in cv.items() for t in scores[0].hybrid]
    return max(keys, key=lambda k: (round(pooled(cv[k[0]])[f"hybrid@{k[1]}"], 6), k[0], k[1]))


def fit_final(
    rows: Sequence[LabelledQuery],
    vectors: np.ndarray,
    l2: float,
    threshold: float,
    provenance: dict[str, Any],
) -> IntentModel:
    """The model on every dev row with today's detector; ``provenance`` is added to its file."""
    rows = dev_only(rows)
    if len(rows) != len(vectors):
        raise ValueError("one vector per dev row")
    d = design(rows, vectors, current_detector())
    model = fit_softmax(d.x, d.y, l2)
    info = {
        "rows": len(rows),
        "rows_sha256": rows_hash(rows),
        "split": "dev",
        "l2": l2,
        "min_probability": threshold,
        "train_accuracy": round(float(np.mean(model.proba(d.x).argmax(axis=1) == d.y)), 4),
        **provenance,
    }
    return IntentModel(model.weights, model.bias, model.mean, model.scale, info)


def cv_summary(scores: Sequence[GroupScore], threshold: float) -> dict[str, Any]:
    p = pooled(scores)
    return {
        "method": "forward chaining: each dev batch by its first-seen detector and a model trained on earlier groups",
        "pooled": {"n": sum(s.n for s in scores), **{k: round(v, 4) for k, v in p.items()}},
        "groups": {
            s.group: {
                "n": s.n,
                "trained_on": s.trained_on,
                "regex": round(s.regex, 4),
                "learned": round(s.learned, 4),
                "hybrid": round(s.hybrid[threshold], 4),
            }
            for s in scores
        },
    }


def cv_table(scores: Sequence[GroupScore], threshold: float) -> str:
    """Markdown: one row per held-out group, then the pooled row."""
    lines = [
        f"| held-out group | n | trained on | regex (first seen) | learned | hybrid (p ≥ {threshold}) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in scores:
        lines.append(
            f"| {s.group} | {s.n} | {s.trained_on} | {s.regex:.3f} | {s.learned:.3f} | {s.hybrid[threshold]:.3f} |"
        )
    p = pooled(scores)
    n = sum(s.n for s in scores)
    lines.append(f"| **all** | {n} | | {p['regex']:.3f} | {p['learned']:.3f} | {p[f'hybrid@{threshold}']:.3f} |")
    return "\n".join(lines)
