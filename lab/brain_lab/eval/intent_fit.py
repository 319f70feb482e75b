"""Fit and validate the learned intent model (``brain_search.retrieval.intent.model``) on the dev rows only.

Why the validation looks back in history: the regex detector of today was tuned on every dev row,
so on any dev group it looks near perfect (0.99) and a model fed its output learns to trust it;
held-out dev rows cannot show how either meets a new phrasing. So each dev-extra batch is
predicted the way it was first met: with the regex output of the detector as it was before that
batch was written and a model trained only on the groups written before it, with the output of
the detectors that first met them. That is forward-chaining validation; its regex column
reproduces the first-seen figures of ``lab/data/README.md``. The n-gram vocabulary of each fold
comes from its training rows only. The regularisation and the hybrid rule are chosen on it (small
grids), the rule only among those that keep dev retrieval (``retrieval_admissible``: the stored dev
candidates of ``brain-search eval --fit`` ranked with each rule), then the model is fitted on every
dev row. Test rows are never read.

First-seen output is data, not code: ``lab/data/intent_first_seen.jsonl`` (``FirstSeen``, one
line per dev row, keyed by its line in ``lab/data/intent_queries.jsonl`` and its query) holds what
the regex columns of each row's feature row read as the detector that first met it gave them: its
tier, target Z, confidence and cues, each cue's tier in that detector's cue table, and the
``statement`` and ``emphasis_quotes`` values (``is_statement`` and ``quotes_as_emphasis``, frozen
when the row was stored). The fit reads that file and never the git history nor today's regex. A
new dev batch is first met by the detector of its day: its rows are added with the current
detector before anything changes it (``add_first_seen``: ``lab/scripts/fit_intent.py --add-first-seen``).
The model file records the file's sha256 (``first_seen_sha256``) and a unit test asks for a refit
when it changes.

Stacking: a training row's regex features are those of the detector that first met it, in
validation and in the final fit alike. The model is a second-stage learner over the regex's output,
and what it must learn is how far to trust that output on a phrasing the regex was not written on,
which is every query it will see in service. Today's detector was tuned on every dev row, so its
features on them say "the regex is right" far more often than it is on a new query (0.99 against
0.65-0.83 first seen). Out-of-sample base outputs are the standard input of a stacked learner; on
forward chaining they scored 0.935 against 0.930 (1302 dev rows). The original rows were met by no
detector before them (the regex was written on them): they carry the earliest detector's output.
The validation's hybrid rule is the service's (``combine``), as it will run; where the regex stands
it reads from the stored record (``statement``) and today's ``is_bare_quote`` (``FirstSeen.intent``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from brain_lab.eval.first_seen import (
    TIER_INDEX,
    FirstSeen,
    FirstSeenStore,
    dev_only,
    group_of,
    load_first_seen,
)
from brain_lab.eval.fit import FitQuery, score
from brain_lab.eval.intent_eval import ORIGINAL, LabelledQuery
from brain_search.retrieval.intent import (
    QueryIntent,
    analyze,
)
from brain_search.retrieval.intent.model import (
    HybridRule,
    IntentModel,
    combine,
    fit_softmax,
    ngram_vocab,
    ngrams,
)
from brain_search.retrieval.score.ranking import RankingParams

# a hybrid may cost dev nDCG@10 at most this much: half of one query's nDCG on the larger dev set (1033
# LoCoMo and 809 SciFact queries), invisible at the report's three decimals. It was 1e-4 until the
# n-gram model (batches 9-10): then every rule cost LoCoMo dev 0.0003-0.0017, and the one chosen
# (0.00035, a third of one question) was worth 1.7 points of validated intent accuracy
RETRIEVAL_TOLERANCE = 5e-4
L2_GRID = (0.3, 1.0, 3.0, 10.0, 30.0)
# the probability the model needs to override a fired regex cue (where none fired it always decides)
THRESHOLD_GRID = (0.0, 0.3, 0.36, 0.4, 0.5)
# each threshold with the regex kept, or not, for quoted queries and for plain statements
RULE_GRID: tuple[HybridRule, ...] = tuple(
    HybridRule(t, keep_statements=ks, keep_quoted=kq)
    for kq in (True, False)
    for ks in (True, False)
    for t in THRESHOLD_GRID
)
# an n-gram is a feature when at least this many training rows hold it
NGRAM_MIN_COUNT = 3


def group_order(rows: Sequence[LabelledQuery]) -> list[str]:
    """``ORIGINAL``, then each other group in the order written (of its first row in ``rows``: new
    batches are appended to the rows file)."""
    order = [ORIGINAL]
    for g in map(group_of, rows):
        if g not in order:
            order.append(g)
    return order


def rows_hash(rows: Sequence[LabelledQuery]) -> str:
    """sha256 of the rows' query, label and group, in order: what the model was fitted on."""
    h = hashlib.sha256()
    for q in rows:
        h.update(json.dumps([q.query, q.label, group_of(q)], ensure_ascii=False).encode() + b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class Design:
    queries: list[str]
    x: np.ndarray
    y: np.ndarray
    regex: list[QueryIntent]


def _ngram_columns(query: str, index: Mapping[str, int]) -> np.ndarray:
    grams = np.zeros(len(index), dtype=np.float64)
    for g in ngrams(query):
        if (i := index.get(g)) is not None:
            grams[i] = 1.0
    return grams


def design(
    rows: Sequence[LabelledQuery],
    vectors: np.ndarray,
    seen: Sequence[FirstSeen],
    vocab: Sequence[str] = (),
) -> Design:
    """Feature rows of ``rows`` (``intent_model.features``: the vector, the regex columns, the
    n-grams of ``vocab``), the regex columns from each row's record ``seen``."""
    if len(rows) != len(vectors) or len(rows) != len(seen):
        raise ValueError("one vector and one first-seen record per row")
    if any(q.query != s.query for q, s in zip(rows, seen, strict=True)):
        raise ValueError("a first-seen record of another query")
    index = {g: i for i, g in enumerate(vocab)}
    x = np.stack(
        [
            np.concatenate(
                [np.asarray(v, dtype=np.float64).ravel(), s.regex_features(), _ngram_columns(q.query, index)]
            )
            for q, v, s in zip(rows, vectors, seen, strict=True)
        ]
    )
    y = np.array([TIER_INDEX[q.label] for q in rows])
    return Design([q.query for q in rows], x, y, [s.intent() for s in seen])


@dataclass(frozen=True)
class GroupScore:
    group: str
    n: int
    trained_on: int
    regex: float
    learned: float
    hybrid: dict[HybridRule, float]  # rule → accuracy


def score_group(
    train: Design, test: Design, l2: float, rules: Sequence[HybridRule]
) -> tuple[float, float, dict[HybridRule, float]]:
    """Accuracy on ``test`` of its regex, the model fitted on ``train``, and each hybrid."""
    model = fit_softmax(train.x, train.y, l2)
    probs = model.proba(test.x)
    regex = np.array([TIER_INDEX[r.detected_intent.value] for r in test.regex])
    hybrid = {}
    for rule in rules:
        tiers = [
            combine(q, r, p, rule).detected_intent.value
            for q, r, p in zip(test.queries, test.regex, probs, strict=True)
        ]
        hybrid[rule] = float(np.mean(np.array([TIER_INDEX[v] for v in tiers]) == test.y))
    return float(np.mean(regex == test.y)), float(np.mean(probs.argmax(axis=1) == test.y)), hybrid


def forward_cv(
    rows: Sequence[LabelledQuery],
    vectors: np.ndarray,
    l2_grid: Sequence[float] = L2_GRID,
    rules: Sequence[HybridRule] = RULE_GRID,
    store: FirstSeenStore | None = None,
    min_count: int = NGRAM_MIN_COUNT,
) -> dict[float, list[GroupScore]]:
    """Each group after ``ORIGINAL``, in the order written (``group_order``), predicted with its
    stored first-seen regex output (``store``, default ``load_first_seen()``) by a model trained on
    the groups before it (``ORIGINAL`` first), with the n-grams of those training rows and each
    training row's own stored first-seen features (stacking). Returns the scores per l2."""
    rows = list(rows)
    seen = (store or load_first_seen()).of(rows)
    vectors = np.asarray(vectors)
    groups = np.array([group_of(q) for q in rows])
    order = group_order(rows)
    out: dict[float, list[GroupScore]] = {l2: [] for l2 in l2_grid}
    for i, group in enumerate(order[1:], start=1):
        train = np.flatnonzero(np.isin(groups, order[:i]))
        test = np.flatnonzero(groups == group)
        vocab = ngram_vocab((rows[int(j)].query for j in train), min_count)
        d_train = design([rows[j] for j in train], vectors[train], [seen[j] for j in train], vocab)
        d_test = design([rows[j] for j in test], vectors[test], [seen[j] for j in test], vocab)
        for l2 in l2_grid:
            regex, learned, hybrid = score_group(d_train, d_test, l2, rules)
            out[l2].append(GroupScore(group, len(test), len(train), regex, learned, hybrid))
    return out


def pooled(scores: Sequence[GroupScore]) -> dict[str, float]:
    """Accuracy over every held-out row (groups weighted by size)."""
    n = sum(s.n for s in scores)
    out = {"regex": sum(s.regex * s.n for s in scores) / n, "learned": sum(s.learned * s.n for s in scores) / n}
    for rule in scores[0].hybrid:
        out[f"hybrid {rule.label}"] = pooled_rule(scores, rule)
    return out


def pooled_rule(scores: Sequence[GroupScore], rule: HybridRule) -> float:
    n = sum(s.n for s in scores)
    return sum(s.hybrid[rule] * s.n for s in scores) / n


def _caution(rule: HybridRule) -> tuple[float, bool, bool]:
    """Ties go to the rule that changes the regex's answer least."""
    return (rule.min_probability, rule.keep_quoted, rule.keep_statements)


def loosest(rules: Collection[HybridRule]) -> HybridRule:
    """The rule that lets the model decide most often."""
    return min(rules, key=_caution)


def choose_l2(cv: dict[float, list[GroupScore]]) -> float:
    """The penalty with the best pooled accuracy of the loosest hybrid rule (the model wherever
    a rule lets it decide); ties: the stronger penalty."""
    rule = loosest(cv[next(iter(cv))][0].hybrid)
    return max(cv, key=lambda l2: (round(pooled_rule(cv[l2], rule), 6), l2))


def choose_rule(scores: Sequence[GroupScore], admissible: Collection[HybridRule] | None = None) -> HybridRule:
    """The rule with the best pooled accuracy among ``admissible`` ones (all when None: those
    that keep dev retrieval, see ``retrieval_admissible``); ties: the more cautious rule (higher
    threshold, regex kept for quotes, then statements)."""
    grid = [r for r in scores[0].hybrid if admissible is None or r in admissible]
    if not grid:
        raise ValueError("no admissible hybrid rule")
    return max(grid, key=lambda r: (round(pooled_rule(scores, r), 6), _caution(r)))


def choose_joint(
    cv: dict[float, list[GroupScore]], admissible: Mapping[float, Collection[HybridRule]]
) -> tuple[float, HybridRule]:
    """(l2, rule) with the best pooled accuracy among the pairs whose model keeps dev retrieval
    (``admissible``: l2 → its admissible rules, see ``retrieval_admissible``); ties: the stronger
    penalty, then the more cautious rule. Where more data makes the model move retrieval queries,
    a stronger penalty or a higher threshold may be what keeps retrieval."""
    pairs = [(l2, r) for l2, rules in admissible.items() for r in rules]
    if not pairs:
        raise ValueError("no admissible (l2, rule) pair")
    return max(pairs, key=lambda p: (round(pooled_rule(cv[p[0]], p[1]), 6), p[0], _caution(p[1])))


def choose(
    cv: dict[float, list[GroupScore]], admissible: Collection[HybridRule] | None = None
) -> tuple[float, HybridRule]:
    """(l2, rule): ``choose_l2`` then ``choose_rule``."""
    l2 = choose_l2(cv)
    return l2, choose_rule(cv[l2], admissible)


def dev_retrieval(
    candidates: Sequence[FitQuery], intents: Mapping[str, QueryIntent], params: RankingParams
) -> dict[str, float]:
    """dataset → dev nDCG@10 of the stored dev candidates (``brain-search eval --fit``) ranked by
    the recall's own relevance with ``intents`` (query text → intent)."""
    sc = score(candidates, params, dict(intents))
    return {k.split("/")[0]: v for k, v in sc.items() if k.endswith("/nDCG@10")}


@dataclass(frozen=True)
class RegexBaseline:
    """The regex's reading of every stored dev candidate query and the dev nDCG@10 it gives: the
    reference each model's rules are held to, computed once for the whole l2 grid."""

    intents: dict[str, QueryIntent]
    ndcg: dict[str, float]


def regex_baseline(candidates: Sequence[FitQuery], params: RankingParams) -> RegexBaseline:
    intents = {t: analyze(t) for t in sorted({q.text for q in candidates})}
    return RegexBaseline(intents, dev_retrieval(candidates, intents, params))


def retrieval_admissible(
    candidates: Sequence[FitQuery],
    vectors: Mapping[str, np.ndarray],
    model: IntentModel,
    rules: Sequence[HybridRule],
    params: RankingParams,
    tolerance: float = RETRIEVAL_TOLERANCE,
    baseline: RegexBaseline | None = None,
) -> tuple[dict[str, float], dict[HybridRule, dict[str, float]], list[HybridRule]]:
    """Dev retrieval with the regex alone, with each hybrid rule, and the rules whose nDCG@10 is
    the regex's or better (less ``tolerance``) on every dataset: the model must not cost
    retrieval. ``baseline``: the regex's, from ``regex_baseline`` (computed here when not given)."""
    baseline = baseline or regex_baseline(candidates, params)
    regex, base = baseline.intents, baseline.ndcg
    probs = {t: model.proba(model.featurize(t, qi, vectors[t]))[0] for t, qi in regex.items()}
    by: dict[HybridRule, dict[str, float]] = {}
    for rule in rules:
        by[rule] = dev_retrieval(candidates, {t: combine(t, qi, probs[t], rule) for t, qi in regex.items()}, params)
    ok = [rule for rule, r in by.items() if all(r[ds] >= base[ds] - tolerance for ds in base)]
    return base, by, ok


@dataclass(frozen=True)
class FinalDesign:
    """Every dev row's features for the final fit, built once and shared by the fit of each l2."""

    rows: list[LabelledQuery]
    vocab: tuple[str, ...]
    design: Design
    min_count: int
    first_seen_sha256: str
    """the stored first-seen records the regex columns came from (``FirstSeenStore.sha256``)"""


def final_design(
    rows: Sequence[LabelledQuery],
    vectors: np.ndarray,
    min_count: int = NGRAM_MIN_COUNT,
    store: FirstSeenStore | None = None,
) -> FinalDesign:
    """Every dev row with its stored first-seen regex features (stacking; ``store``, default
    ``load_first_seen()``) and the n-grams of every dev row."""
    rows = dev_only(rows)
    if len(rows) != len(vectors):
        raise ValueError("one vector per dev row")
    store = store or load_first_seen()
    vocab = ngram_vocab((q.query for q in rows), min_count)
    return FinalDesign(rows, vocab, design(rows, vectors, store.of(rows), vocab), min_count, store.sha256)


def fit_final(final: FinalDesign, l2: float, provenance: dict[str, Any]) -> IntentModel:
    """The model on every dev row (``final_design``); ``provenance`` (the hybrid rule among it) is
    added to its file."""
    d = final.design
    model = fit_softmax(d.x, d.y, l2)
    info = {
        "rows": len(final.rows),
        "rows_sha256": rows_hash(final.rows),
        "split": "dev",
        "l2": l2,
        "ngram_min_count": final.min_count,
        "regex_features_from": (
            "each row's first-seen detector (the original rows: the earliest), as stored in"
            " lab/data/intent_first_seen.jsonl with the statement and emphasis_quotes columns"
        ),
        "first_seen_sha256": final.first_seen_sha256,
        "train_accuracy": round(float(np.mean(model.proba(d.x).argmax(axis=1) == d.y)), 4),
        **provenance,
    }
    return IntentModel(model.weights, model.bias, model.mean, model.scale, info, final.vocab)


def cv_summary(scores: Sequence[GroupScore], rule: HybridRule) -> dict[str, Any]:
    p = pooled(scores)
    return {
        "method": (
            "forward chaining: each dev batch by its first-seen detector and a model trained on earlier groups,"
            " each training row with its own first-seen detector's features"
        ),
        "pooled": {"n": sum(s.n for s in scores), **{k: round(v, 4) for k, v in p.items()}},
        "groups": {
            s.group: {
                "n": s.n,
                "trained_on": s.trained_on,
                "regex": round(s.regex, 4),
                "learned": round(s.learned, 4),
                "hybrid": round(s.hybrid[rule], 4),
            }
            for s in scores
        },
    }


def cv_table(scores: Sequence[GroupScore], rule: HybridRule) -> str:
    """Markdown: one row per held-out group, then the pooled row."""
    lines = [
        f"| held-out group | n | trained on | regex (first seen) | learned | hybrid ({rule.label}) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in scores:
        lines.append(f"| {s.group} | {s.n} | {s.trained_on} | {s.regex:.3f} | {s.learned:.3f} | {s.hybrid[rule]:.3f} |")
    p = pooled(scores)
    n = sum(s.n for s in scores)
    lines.append(f"| **all** | {n} | | {p['regex']:.3f} | {p['learned']:.3f} | {pooled_rule(scores, rule):.3f} |")
    return "\n".join(lines)
