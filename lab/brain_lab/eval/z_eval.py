"""What the Z axis looks like to a user, measured: the figures of "The Z axis means what it says".

- **Exact-tier placement**: a 6–8-word phrase from one turn, asked quoted (``"…"``) and as "What
  exactly did I say about …?", in tiered mode: is the turn that holds it in the Exact tier?
- **Exact-tier precision**: the share of everything the Exact tier shows for those queries that
  holds the phrase, or all of its content words.
- **Tier spread**: LoCoMo questions in tiered mode: the share of shown results in each tier, and
  how many questions show anything in each tier.
- **Nothing matched**: each question asked twice, once over the whole conversation and once with
  its evidence turns left out of the search; the AUROC of the response's match-strength signal
  (present = positive), and how often the response says "nothing matched" in each case.

Everything here is pure over a ``recall(tenant, request, exclude) -> RecallResponse`` callable, so
the runner can hand it the real pipeline over the engine.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from brain_lab.eval.datasets import ADVERSARIAL, EvalQuery, Memory, spoken_text
from brain_lab.eval.exact_match import Phrase, contains_phrase, normalize, sample_phrases
from brain_lab.eval.intent_eval import wilson_interval
from brain_search.models import MemoryResult, RecallRequest, RecallResponse
from brain_search.retrieval.score.tiers import TIER_NAMES
from brain_search.retrieval.text import STOPWORDS

Recall = Callable[[str, RecallRequest, Sequence[str]], RecallResponse]
"""(tenant, request, memory ids to leave out of the search) → the response."""

Z_FORMS: dict[str, str] = {
    "quoted": '"{p}"',
    "what_exactly": "What exactly did I say about {p}?",
}


@dataclass(frozen=True)
class ZPhraseQuery:
    phrase: Phrase
    form: str
    query: str


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content (normalised, stopwords out), in order, distinct."""
    words = normalize(text).split()
    kept = [w for w in words if w not in STOPWORDS]
    return list(dict.fromkeys(kept or words))


def holds_literally(content: str, phrase: str) -> bool:
    """``content`` holds ``phrase`` word for word, or every one of its content words."""
    if contains_phrase(content, phrase):
        return True
    have = set(normalize(content).split())
    words = content_words(phrase)
    return bool(words) and all(w in have for w in words)


def z_phrase_queries(pools: dict[str, list[Memory]], n: int, seed: int) -> list[ZPhraseQuery]:
    """``n`` phrases of 6–8 words said in exactly one turn of their conversation, each asked in
    every form of ``Z_FORMS``."""
    phrases = sample_phrases(pools, n, seed, "locomo", text_of=spoken_text, min_words=6, max_words=8)
    return [ZPhraseQuery(p, form, tpl.format(p=p.text)) for p in phrases for form, tpl in Z_FORMS.items()]


def tier_lists(resp: RecallResponse) -> dict[str, list[MemoryResult]]:
    if resp.tiers is None:
        raise ValueError("a tiered response was expected")
    return {name: list(getattr(resp.tiers, name)) for name in TIER_NAMES}


@dataclass
class ExactTierResult:
    split: str
    queries: list[ZPhraseQuery] = field(default_factory=list)
    placed: list[bool] = field(default_factory=list)
    """per query: the holder is in the Exact tier"""
    shown: int = 0
    """Exact-tier items over all queries"""
    literal: int = 0
    """of those, items that hold the phrase or all its content words"""
    misses: list[dict[str, object]] = field(default_factory=list)

    @property
    def placement(self) -> float:
        return sum(self.placed) / len(self.placed) if self.placed else 0.0

    def placement_interval(self) -> tuple[float, float]:
        return wilson_interval(sum(self.placed), len(self.placed))

    @property
    def precision(self) -> float:
        return self.literal / self.shown if self.shown else 0.0

    def precision_interval(self) -> tuple[float, float]:
        return wilson_interval(self.literal, self.shown)

    def by_form(self) -> dict[str, float]:
        out: dict[str, list[bool]] = {}
        for q, ok in zip(self.queries, self.placed, strict=True):
            out.setdefault(q.form, []).append(ok)
        return {f: sum(v) / len(v) for f, v in out.items()}


def evaluate_exact_tier(
    queries: Sequence[ZPhraseQuery],
    recall: Recall,
    split: str,
    limit: int = 10,
    progress: Callable[[int], None] | None = None,
) -> ExactTierResult:
    result = ExactTierResult(split=split)
    for q in queries:
        resp = recall(q.phrase.tenant_id, RecallRequest(query=q.query, tiered=True, limit=limit, time_words=False), ())
        exact = tier_lists(resp)["exact_matches"]
        ok = any(r.id == q.phrase.memory_id for r in exact)
        result.queries.append(q)
        result.placed.append(ok)
        result.shown += len(exact)
        result.literal += sum(1 for r in exact if holds_literally(r.content, q.phrase.text))
        if not ok and len(result.misses) < 40:
            where = next(
                (
                    (name, r.scores.z_position)
                    for name, items in tier_lists(resp).items()
                    for r in items
                    if r.id == q.phrase.memory_id
                ),
                None,
            )
            result.misses.append({"query": q.query, "holder": q.phrase.memory_id, "found_in": where})
        if progress:
            progress(1)
    return result


@dataclass
class TierSpreadResult:
    split: str
    n_queries: int = 0
    shown: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TIER_NAMES, 0))
    nonempty: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TIER_NAMES, 0))
    relevant: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TIER_NAMES, 0))
    """per tier: shown items that are one of the question's evidence turns"""
    nothing_matched: int = 0
    with_holder: int = 0
    """questions for which some memory of the conversation is an exact match (holds every content
    word literally, close together): the most the Exact tier can be filled for"""
    holder_shown: int = 0
    """of those, questions whose Exact tier shows such a memory"""

    @property
    def total(self) -> int:
        return sum(self.shown.values())

    def shares(self) -> dict[str, float]:
        t = self.total
        return {k: (v / t if t else 0.0) for k, v in self.shown.items()}

    def relevant_shares(self) -> dict[str, float]:
        """Per tier, the share of what it shows that is evidence for the question."""
        return {k: (self.relevant[k] / v if v else 0.0) for k, v in self.shown.items()}


Holders = Callable[[EvalQuery], set[str]]
"""question → ids of the memories of its conversation that are exact matches for it"""


def evaluate_tier_spread(
    queries: Sequence[EvalQuery],
    recall: Recall,
    split: str,
    limit: int = 10,
    progress: Callable[[int], None] | None = None,
    holders: Holders | None = None,
) -> TierSpreadResult:
    result = TierSpreadResult(split=split)
    for q in queries:
        resp = recall(q.tenant_id, RecallRequest(query=q.text, tiered=True, limit=limit, time_words=False), ())
        result.n_queries += 1
        tiers = tier_lists(resp)
        for name, items in tiers.items():
            result.shown[name] += len(items)
            result.nonempty[name] += bool(items)
            result.relevant[name] += sum(1 for r in items if r.id in q.relevant)
        result.nothing_matched += bool(getattr(resp.query_analysis, "nothing_matched", False))
        exact_ids = holders(q) if holders else set()
        if exact_ids:
            result.with_holder += 1
            result.holder_shown += any(r.id in exact_ids for r in tiers["exact_matches"])
        if progress:
            progress(1)
    return result


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(a positive scores above a negative), ties half (Mann–Whitney U / (n⁺ n⁻))."""
    if not positives or not negatives:
        return 0.5
    neg = sorted(negatives)
    import bisect

    total = 0.0
    for p in positives:
        below = bisect.bisect_left(neg, p)
        ties = bisect.bisect_right(neg, p) - below
        total += below + 0.5 * ties
    return total / (len(positives) * len(negatives))


def auroc_interval(
    positives: Sequence[float], negatives: Sequence[float], resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95 % bootstrap interval of the AUROC, the (present, removed) pairs of a question resampled
    together (they share the question)."""
    rng = random.Random(seed)
    n = len(positives)
    if n == 0 or len(negatives) != n:
        return (0.0, 1.0)
    vals = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        vals.append(auroc([positives[i] for i in idx], [negatives[i] for i in idx]))
    vals.sort()
    return vals[int(0.025 * resamples)], vals[int(0.975 * resamples) - 1]


def signal_of(resp: RecallResponse) -> float:
    """The response's match-strength signal: ``query_analysis.best_match`` where the service
    reports one, else the first result's relevance (what a client had before)."""
    best = getattr(resp.query_analysis, "best_match", None)
    if best is not None:
        return float(best)
    return float(resp.results[0].scores.relevance) if resp.results else 0.0


@dataclass
class NothingMatchedResult:
    split: str
    present: list[float] = field(default_factory=list)
    removed: list[float] = field(default_factory=list)
    said_nothing_present: int = 0
    said_nothing_removed: int = 0
    points: list[tuple[str, float, bool]] = field(default_factory=list)
    """each shown result of the evidence-present recalls: (match kind, match strength, relevant)"""
    removed_top: list[tuple[str, float]] = field(default_factory=list)
    """the first result of each evidence-removed recall: (match kind, match strength), what a
    caller would take for an answer where the tenant holds none"""

    @property
    def n(self) -> int:
        return len(self.present)

    @property
    def auroc(self) -> float:
        return auroc(self.present, self.removed)

    def interval(self) -> tuple[float, float]:
        return auroc_interval(self.present, self.removed)


def evaluate_nothing_matched(
    queries: Sequence[EvalQuery],
    recall: Recall,
    split: str,
    limit: int = 10,
    progress: Callable[[int], None] | None = None,
) -> NothingMatchedResult:
    result = NothingMatchedResult(split=split)
    for q in queries:
        # a question asked at a time (RealMem) is asked of what was said before it
        req = RecallRequest(query=q.text, tiered=True, limit=limit, time_words=False, until=q.until)
        full = recall(q.tenant_id, req, ())
        gone = recall(q.tenant_id, req, list(q.relevant))
        result.present.append(signal_of(full))
        result.removed.append(signal_of(gone))
        result.points += [(r.match_kind.value, r.scores.match, r.id in q.relevant) for r in full.results]
        result.removed_top += [(r.match_kind.value, r.scores.match) for r in gone.results[:1]]
        result.said_nothing_present += bool(getattr(full.query_analysis, "nothing_matched", False))
        result.said_nothing_removed += bool(getattr(gone.query_analysis, "nothing_matched", False))
        if progress:
            progress(1)
    return result


def question_sample(queries: Iterable[EvalQuery], n: int, seed: int) -> list[EvalQuery]:
    """Up to ``n`` non-adversarial questions, drawn with a fixed seed (the adversarial ones have no
    answer in the conversation at all)."""
    pool = [q for q in queries if q.category != ADVERSARIAL]
    if len(pool) <= n:
        return pool
    return random.Random(seed).sample(pool, n)


# --------------------------------------------------------------------------------------------
# fitting the calibration on dev, and Z per labelled kind of match


@dataclass(frozen=True)
class Pair:
    """One (query, memory) pair for the calibration: the raw cosine and the share of the query's
    terms the memory holds literally."""

    cosine: float
    shared: float


def literal_share(query_terms: Sequence[str], content: str) -> float:
    """Share of ``query_terms`` (normalised) that occur as words of ``content``."""
    if not query_terms:
        return 0.0
    have = set(normalize(content).split())
    return sum(1 for t in query_terms if t in have) / len(query_terms)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100), linear interpolation."""
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def youden_threshold(positives: Sequence[float], negatives: Sequence[float]) -> tuple[float, float]:
    """The threshold t maximising TPR − FPR (Youden's J) for "value ≥ t is a positive", and J."""
    cuts = sorted(set(positives) | set(negatives))
    pos = sorted(positives)
    neg = sorted(negatives)
    import bisect

    best_t, best_j = (cuts[0] if cuts else 0.0), -1.0
    for t in cuts:
        tpr = 1 - bisect.bisect_left(pos, t) / len(pos)
        fpr = 1 - bisect.bisect_left(neg, t) / len(neg)
        if tpr - fpr > best_j:
            best_t, best_j = t, tpr - fpr
    return best_t, best_j


@dataclass
class CalibrationFit:
    """What ``fit_calibration`` read and chose (written into the report)."""

    calibration: object
    n_positive: int
    n_negative: int
    unrelated_percentiles: dict[str, float]
    relevant_percentiles: dict[str, float]
    youden_j: float
    floor_tpr: float
    floor_fpr: float


def fit_calibration(positives: Sequence[Pair], negatives: Sequence[Pair], base: object) -> CalibrationFit:
    """The calibrated Z's constants from dev pairs: ``cos_unrelated`` = the median cosine of
    unrelated pairs, ``cos_strong`` = the median cosine of relevant pairs (a cosine an answer
    typically has: a match in other words at that cosine sits at Z 0.5), and ``floor`` =
    the match strength that best separates relevant from unrelated pairs (Youden's J).
    ``base``: a ``ZCalibration`` whose other fields are kept."""
    from dataclasses import replace

    from brain_search.retrieval.score.zaxis import ZCalibration

    if not positives or not negatives:
        raise ValueError("fit_calibration needs relevant and unrelated pairs")
    assert isinstance(base, ZCalibration)
    pos_cos = [p.cosine for p in positives]
    neg_cos = [p.cosine for p in negatives]
    cal = replace(base, cos_unrelated=round(percentile(neg_cos, 50), 3), cos_strong=round(percentile(pos_cos, 50), 3))

    def strengths(pairs: Sequence[Pair]) -> list[float]:
        return [cal.strength(p.cosine, p.shared) for p in pairs]

    sp, sn = strengths(positives), strengths(negatives)
    floor, j = youden_threshold(sp, sn)
    cal = replace(cal, floor=math.floor(floor * 1000) / 1000)  # rounded down: the cut point stays in
    tpr = sum(1 for v in sp if v >= cal.floor) / len(sp)
    fpr = sum(1 for v in sn if v >= cal.floor) / len(sn)
    qs = (50, 90, 95, 98, 99)
    return CalibrationFit(
        calibration=cal,
        n_positive=len(positives),
        n_negative=len(negatives),
        unrelated_percentiles={f"p{q}": round(percentile(neg_cos, q), 3) for q in qs},
        relevant_percentiles={f"p{q}": round(percentile(pos_cos, q), 3) for q in (10, 25, 50, 75, 90)},
        youden_j=round(j, 3),
        floor_tpr=round(tpr, 3),
        floor_fpr=round(fpr, 3),
    )


LABELLED_KINDS = (
    "holds the quoted phrase",
    "answer, shares the question's words",
    "answer, in other words",
    "unrelated (another conversation)",
)


# --------------------------------------------------------------------------------------------
# the calibrated relevance: the share of results of a kind and strength of match that are relevant


def isotonic(ys: Sequence[float], weights: Sequence[float] | None = None) -> list[float]:
    """The non-decreasing weighted least-squares fit of ``ys`` (pool adjacent violators; pure)."""
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for j, y in enumerate(ys):
        w = 1.0 if weights is None else weights[j]
        blocks.append([y * w, w, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, w2, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += w2
            blocks[-1][2] += c
    out: list[float] = []
    for s, w, c in blocks:
        out += [s / w] * int(c)
    return out


@dataclass(frozen=True)
class RelevanceFit:
    knots: tuple[tuple[float, float], ...]
    """(match strength, chance of a relevant memory), strength ascending"""
    n_positive: int
    n_negative: int


STRENGTH_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def fit_relevance_curve(positives: Sequence[float], negatives: Sequence[float]) -> RelevanceFit:
    """The calibrated relevance by match strength: the chance that a result at a strength is a
    question's answer rather than the best a tenant without the answer offers, the two equally
    likely a priori (each class weighs 1 in all). ``positives``: the strengths of answers (evidence
    turns among the results); ``negatives``: of the first result of recalls whose evidence was
    removed. The weighted isotonic fit of the label on the strength, read at ``STRENGTH_GRID``
    (rounded to 3 decimals; flat beyond the strengths seen)."""
    rows = sorted(
        [(s, 1.0, 1.0 / max(len(positives), 1)) for s in positives]
        + [(s, 0.0, 1.0 / max(len(negatives), 1)) for s in negatives]
    )
    if not rows:
        return RelevanceFit(((0.0, 0.0), (1.0, 1.0)), 0, 0)
    tied: dict[float, list[float]] = {}  # a strength seen in both classes is one point: [Σ w·y, Σ w]
    for x, y, w in rows:
        acc = tied.setdefault(x, [0.0, 0.0])
        acc[0] += w * y
        acc[1] += w
    xs = sorted(tied)
    fitted = isotonic([tied[x][0] / tied[x][1] for x in xs], [tied[x][1] for x in xs])
    knots = []
    for g in STRENGTH_GRID:
        j = min(max(bisect.bisect_right(xs, g) - 1, 0), len(xs) - 1)
        knots.append((g, round(fitted[j], 3)))
    return RelevanceFit(tuple(knots), len(positives), len(negatives))


def reliability(
    points: Sequence[tuple[str, float, bool]], predict: Callable[[str, float], float], bins: int = 5
) -> list[tuple[float, float, int]]:
    """(mean predicted relevance, share relevant, n) per bin of predicted relevance, equal counts."""
    rows = sorted((predict(kind, s), float(rel)) for kind, s, rel in points)
    out: list[tuple[float, float, int]] = []
    for b in range(bins):
        part = rows[b * len(rows) // bins : (b + 1) * len(rows) // bins]
        if part:
            out.append((sum(p for p, _ in part) / len(part), sum(r for _, r in part) / len(part), len(part)))
    return out
