"""The ``z`` part of ``brain-search eval``: the Z figures of ``z_eval`` on one LoCoMo split,
through the real pipeline over the evaluation index, for both Z formulas; on dev also the
calibration fit (``fit_calibration``) that the shipped defaults come from.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from brain_lab.eval.datasets import SCIFACT_TENANT, Dataset, EvalQuery
from brain_lab.eval.z_eval import (
    LABELLED_KINDS,
    CalibrationFit,
    ExactTierResult,
    Holders,
    NothingMatchedResult,
    Pair,
    RelevanceFit,
    TierSpreadResult,
    evaluate_exact_tier,
    evaluate_nothing_matched,
    evaluate_tier_spread,
    fit_calibration,
    fit_relevance_curve,
    literal_share,
    question_sample,
    z_phrase_queries,
)
from brain_search.encoders.embedding import Embedder
from brain_search.models import RecallRequest, RecallResponse, ZFormula
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.score.zaxis import ZCalibration, match, query_terms_of
from brain_search.retrieval.text import query_terms

Progress = Callable[[str, int], Callable[[int], None]]


@dataclass
class ZResult:
    split: str
    calibration: ZCalibration
    exact: dict[str, ExactTierResult] = field(default_factory=dict)
    """Z formula → Exact-tier placement and precision"""
    spread: dict[str, TierSpreadResult] = field(default_factory=dict)
    """Z formula → tier spread over LoCoMo questions"""
    removed: NothingMatchedResult | None = None
    """evidence present vs left out of the search"""
    foreign: NothingMatchedResult | None = None
    """asked of its own conversation vs of another one"""
    realmem: NothingMatchedResult | None = None
    """RealMem's questions (each over the sessions before it): evidence present vs left out"""
    kinds: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Z formula → labelled kind of match → Z of each such (query, memory) pair"""
    fit: CalibrationFit | None = None
    relevance: RelevanceFit | None = None
    """on dev: the calibrated relevance fitted on the evidence-present recalls' results"""


def _recall(retriever: Retriever, formula: ZFormula) -> Callable[[str, RecallRequest, Sequence[str]], RecallResponse]:
    def recall(tenant: str, req: RecallRequest, exclude: Sequence[str]) -> RecallResponse:
        return retriever.recall(tenant, req.model_copy(update={"z_formula": formula}), exclude=exclude)

    return recall


def _foreign_tenant(tenants: Sequence[str], tenant: str) -> str:
    ordered = sorted(tenants)
    return ordered[(ordered.index(tenant) + 1) % len(ordered)]


def labelled_z(
    retriever: Retriever,
    locomo: Dataset,
    phrases: Sequence[tuple[str, str, str]],
    questions: Sequence[EvalQuery],
    formula: ZFormula = ZFormula.calibrated,
) -> dict[str, list[float]]:
    """Z (``formula``) of (query, memory) pairs by labelled kind: the holders of quoted phrases
    (``phrases``: tenant, query, holder id), questions' evidence turns that hold at least half of
    the question's terms and those that do not, and the closest turns of another conversation."""
    out: dict[str, list[float]] = {k: [] for k in LABELLED_KINDS}
    content = locomo.content_by_id()

    def candidates(tenant: str, query: str) -> dict[str, float]:
        resp = retriever.recall(tenant, RecallRequest(query=query, limit=100, z_formula=formula, time_words=False))
        return {r.id: r.scores.z_position for r in resp.results}

    for tenant, query, holder in phrases:
        z = candidates(tenant, query).get(holder)
        if z is not None:
            out[LABELLED_KINDS[0]].append(z)
    tenants = list(locomo.memories)
    for q in questions:
        zs = candidates(q.tenant_id, q.text)
        terms = query_terms(q.text)
        for mid in q.relevant:
            if mid in zs:
                share = literal_share(terms, content.get((q.tenant_id, mid), ""))
                out[LABELLED_KINDS[1] if share >= 0.5 else LABELLED_KINDS[2]].append(zs[mid])
        foreign = candidates(_foreign_tenant(tenants, q.tenant_id), q.text)
        out[LABELLED_KINDS[3]] += sorted(foreign.values())[:5]
    return out


def exact_holders(retriever: Retriever, locomo: Dataset) -> Holders:
    """For a question, the memories of its conversation that the service's own rule
    (``zaxis.match``) calls an exact match: they hold the phrase, or every content word of the
    question as the pipeline reads it, literally and close together. Pure text: no cosine or
    engine hit can make a memory exact. Each question is read once (the tier spread asks for it
    under both Z formulas)."""
    mems = locomo.memories
    cal = retriever.calibration
    seen: dict[tuple[str, str], set[str]] = {}

    def holders(q: EvalQuery) -> set[str]:
        key = (q.tenant_id, q.text)
        if key not in seen:
            plan = retriever.plan(q.tenant_id, RecallRequest(query=q.text, time_words=False))
            terms = query_terms_of(plan.intent.lexical_query, plan.intent.phrases, plan.terms, cal.key_weight)
            misses = [False] * len(terms.terms)
            seen[key] = {m.memory_id for m in mems[q.tenant_id] if match(m.content, terms, misses, 0.0, cal=cal).exact}
        return seen[key]

    return holders


def calibration_pairs(
    embedder: Embedder,
    locomo: Dataset,
    scifact: Dataset | None,
    seed: int,
    negatives_per_query: int = 20,
    query_embedder: Embedder | None = None,
) -> tuple[list[Pair], list[Pair]]:
    """Dev pairs for ``fit_calibration``: (question, evidence) as relevant; (question, a random
    memory of another conversation) and (claim, a random abstract not relevant to it) as
    unrelated. Cosines from the evaluation's (cached) vectors; shares are literal."""
    rng = random.Random(seed)
    pos: list[Pair] = []
    neg: list[Pair] = []
    sets: list[tuple[Dataset, bool]] = [(locomo, True)] + ([(scifact, False)] if scifact else [])
    for ds, by_tenant in sets:
        mems = {t: ms for t, ms in ds.memories.items()}
        vecs = {t: embedder.encode([m.content for m in ms]) for t, ms in mems.items()}
        index = {t: {m.memory_id: i for i, m in enumerate(ms)} for t, ms in mems.items()}
        queries = [q for q in ds.queries if q.category != "adversarial"]
        qv = (query_embedder or embedder).encode([q.text for q in queries])
        for q, v in zip(queries, qv, strict=True):
            terms = query_terms(q.text)
            for mid in q.relevant:
                i = index[q.tenant_id].get(mid)
                if i is not None:
                    pos.append(
                        Pair(float(vecs[q.tenant_id][i] @ v), literal_share(terms, mems[q.tenant_id][i].content))
                    )
            others = [t for t in mems if t != q.tenant_id] if by_tenant else []
            if others:
                picks = [
                    (t, rng.randrange(len(mems[t]))) for t in (rng.choice(others) for _ in range(negatives_per_query))
                ]
            else:  # one document set, or one conversation only (`eval --quick`): non-relevant ones of it
                t = q.tenant_id
                picks = [(t, i) for i in rng.sample(range(len(mems[t])), min(negatives_per_query, len(mems[t])))]
                picks = [(t, i) for t, i in picks if mems[t][i].memory_id not in q.relevant]
            for t, i in picks:
                neg.append(Pair(float(vecs[t][i] @ v), literal_share(terms, mems[t][i].content)))
    return pos, neg


def run_z(
    retriever: Retriever,
    embedder: Embedder,
    locomo: Dataset,
    split: str,
    seed: int,
    n_phrases: int,
    n_questions: int | None,
    progress: Progress,
    scifact: Dataset | None = None,
    query_embedder: Embedder | None = None,
) -> ZResult:
    """Every Z figure of ``split`` (LoCoMo; ``scifact``: the SciFact claims of the same split, for
    the calibration fit on dev)."""
    result = ZResult(split=split, calibration=retriever.calibration)
    zq = z_phrase_queries(locomo.memories, n_phrases, seed)
    queries = query_embedder or embedder
    queries.encode([q.query for q in zq])
    questions = question_sample(locomo.queries, n_questions or len(locomo.queries), seed)
    queries.encode([q.text for q in questions])
    holders = exact_holders(retriever, locomo)
    for formula in (ZFormula.calibrated, ZFormula.spec):
        recall = _recall(retriever, formula)
        bar = progress(f"Z {split}: Exact tier, {formula.value} Z ({len(zq)} queries)", len(zq))
        result.exact[formula.value] = evaluate_exact_tier(zq, recall, split, progress=bar)
        bar = progress(f"Z {split}: tier spread, {formula.value} Z ({len(questions)} questions)", len(questions))
        result.spread[formula.value] = evaluate_tier_spread(questions, recall, split, progress=bar, holders=holders)
    recall = _recall(retriever, ZFormula.calibrated)
    bar = progress(f"Z {split}: nothing matched, evidence removed ({len(questions)})", len(questions))
    result.removed = evaluate_nothing_matched(questions, recall, split, progress=bar)
    tenants = list(locomo.memories)
    foreign_qs = [
        EvalQuery(q.query_id, _foreign_tenant(tenants, q.tenant_id), q.text, {}, q.category) for q in questions
    ]
    bar = progress(f"Z {split}: nothing matched, another conversation ({len(questions)})", len(questions))
    result.foreign = _present_vs(questions, foreign_qs, recall, split, bar)
    kind_qs = questions[: min(300, len(questions))]
    phrases = [(q.phrase.tenant_id, q.query, q.phrase.memory_id) for q in zq if q.form == "quoted"]
    result.kinds = {f.value: labelled_z(retriever, locomo, phrases, kind_qs, f) for f in ZFormula}
    if split == "dev":
        pos, neg = calibration_pairs(embedder, locomo, scifact, seed, query_embedder=queries)
        result.fit = fit_calibration(pos, neg, retriever.calibration)
        nm = result.removed
        answers = [strength for _, strength, relevant in nm.points if relevant]
        result.relevance = fit_relevance_curve(answers, [strength for _, strength in nm.removed_top])
    return result


def _present_vs(
    own: Sequence[EvalQuery],
    other: Sequence[EvalQuery],
    recall: Callable[[str, RecallRequest, Sequence[str]], RecallResponse],
    split: str,
    bar: Callable[[int], None],
) -> NothingMatchedResult:
    from brain_lab.eval.z_eval import signal_of

    res = NothingMatchedResult(split=split)
    for a, b in zip(own, other, strict=True):
        req = RecallRequest(query=a.text, tiered=True, limit=10, time_words=False)
        ra, rb = recall(a.tenant_id, req, ()), recall(b.tenant_id, req, ())
        res.present.append(signal_of(ra))
        res.removed.append(signal_of(rb))
        res.said_nothing_present += ra.query_analysis.nothing_matched
        res.said_nothing_removed += rb.query_analysis.nothing_matched
        bar(1)
    return res


def scifact_split(ds: Dataset, split_ids: set[str]) -> Dataset:
    """The SciFact dataset restricted to one split's claims (the corpus stays whole)."""
    return Dataset(
        ds.name,
        "split",
        {SCIFACT_TENANT: ds.memories[SCIFACT_TENANT]},
        [q for q in ds.queries if q.query_id in split_ids],
    )
