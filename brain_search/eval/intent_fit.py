"""Fit and validate the learned intent model (``brain_search.intent_model``) on the dev rows only.

Why the validation looks back in history: the regex detector of today was tuned on every dev row,
so on any dev group it looks near perfect (0.99) and a model fed its output learns to trust it;
held-out dev rows cannot show how either meets a new phrasing. So each dev-extra batch is
predicted the way it was first met: with the detector as it was before that batch was written
(``HISTORY``: the commit whose ``brain_search/intent.py`` first saw it, read with ``git show``) and a
model trained only on the groups written before it, with that same detector's features. That is
forward-chaining validation; its regex column reproduces the first-seen figures of
``tests/data/README.md``. The regularisation and the hybrid threshold are chosen on it (a small
grid), the threshold only among those that keep dev retrieval (``retrieval_admissible``: the stored
dev candidates of ``brain-search eval --fit`` ranked with each rule), then the model is fitted on
every dev row with today's detector. Test rows are never read.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import types
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from brain_search.eval.fit import FitQuery, score
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
from brain_search.scoring import RankingParams

# a hybrid may cost dev nDCG@10 at most this much (a tenth of one query's nDCG on either dev set, 1033
# LoCoMo and 809 SciFact queries: invisible at the report's three decimals)
RETRIEVAL_TOLERANCE = 1e-4
L2_GRID = (0.3, 1.0, 3.0, 10.0, 30.0)
# the probability the model needs to override a fired regex cue (where none fired it always decides)
THRESHOLD_GRID = (0.0, 0.3, 0.32, 0.34, 0.36, 0.38, 0.4, 0.5)
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
    queries: list[str]
    x: np.ndarray
    y: np.ndarray
    regex: list[QueryIntent]


def design(rows: Sequence[LabelledQuery], vectors: np.ndarray, detector: Detector) -> Design:
    if len(rows) != len(vectors):
        raise ValueError("one vector per row")
    regex = [detector.analyze(q.query) for q in rows]
    x = np.stack([features(q.query, r, v, detector.table) for q, r, v in zip(rows, regex, vectors, strict=True)])
    return Design([q.query for q in rows], x, np.array([TIER_INDEX[q.label] for q in rows]), regex)


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
        rule = HybridRule(t)
        tiers = [
            combine(d.queries[i], d.regex[i], p, rule).detected_intent.value for i, p in zip(test, probs, strict=True)
        ]
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


def choose_l2(cv: dict[float, list[GroupScore]]) -> float:
    """The penalty with the best pooled hybrid accuracy at the lowest threshold (the model wherever
    the rule lets it decide); ties: the stronger penalty."""
    t = min(cv[next(iter(cv))][0].hybrid)
    return max(cv, key=lambda l2: (round(pooled(cv[l2])[f"hybrid@{t}"], 6), l2))


def choose_threshold(scores: Sequence[GroupScore], admissible: Collection[float] | None = None) -> float:
    """The threshold with the best pooled hybrid accuracy among ``admissible`` ones (all when
    None: those that keep dev retrieval, see ``retrieval_admissible``); ties: the higher threshold
    (fewer changes to the regex's answer)."""
    p = pooled(scores)
    grid = [t for t in scores[0].hybrid if admissible is None or t in admissible]
    if not grid:
        raise ValueError("no admissible hybrid threshold")
    return max(grid, key=lambda t: (round(p[f"hybrid@{t}"], 6), t))


def choose(cv: dict[float, list[GroupScore]], admissible: Collection[float] | None = None) -> tuple[float, float]:
    """(l2, threshold): ``choose_l2`` then ``choose_threshold``."""
    l2 = choose_l2(cv)
    return l2, choose_threshold(cv[l2], admissible)


def dev_retrieval(
    candidates: Sequence[FitQuery], intents: Mapping[str, QueryIntent], params: RankingParams
) -> dict[str, float]:
    """dataset → dev nDCG@10 of the stored dev candidates (``brain-search eval --fit``) ranked by
    the recall's own relevance with ``intents`` (query text → intent)."""
    sc = score(candidates, params, dict(intents))
    return {k.split("/")[0]: v for k, v in sc.items() if k.endswith("/nDCG@10")}


def retrieval_admissible(
    candidates: Sequence[FitQuery],
    vectors: Mapping[str, np.ndarray],
    model: IntentModel,
    thresholds: Sequence[float],
    params: RankingParams,
    tolerance: float = RETRIEVAL_TOLERANCE,
) -> tuple[dict[str, float], dict[float, dict[str, float]], list[float]]:
    """Dev retrieval with the regex alone, with each hybrid threshold, and the thresholds whose
    nDCG@10 is the regex's or better (less ``tolerance``) on every dataset: the model must not
    cost retrieval."""
    texts = sorted({q.text for q in candidates})
    regex = {t: analyze(t) for t in texts}
    probs = {t: model.proba(features(t, regex[t], vectors[t]))[0] for t in texts}
    base = dev_retrieval(candidates, regex, params)
    by: dict[float, dict[str, float]] = {}
    for th in thresholds:
        rule = HybridRule(th)
        by[th] = dev_retrieval(candidates, {t: combine(t, regex[t], probs[t], rule) for t in texts}, params)
    ok = [th for th, r in by.items() if all(r[ds] >= base[ds] - tolerance for ds in base)]
    return base, by, ok


def fit_final(
    rows: Sequence[LabelledQuery],
    vectors: np.ndarray,
    l2: float,
    provenance: dict[str, Any],
) -> IntentModel:
    """The model on every dev row with today's detector; ``provenance`` (the hybrid rule's
    ``min_probability`` and ``keep_statements`` among it) is added to its file."""
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
