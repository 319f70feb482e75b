"""The recall's score and rank stages, pure: candidates (with both engine scores) in, features,
relevance and order out. No engine, no settings: the pipeline calls them after its one round trip,
and the lab's fitter calls the same functions on stored candidates, so the fitted numbers are the
recall's numbers. The formulas themselves (the Z-aware blend, lexical precision) are
``ranking.py``'s, over plain lists; this module turns candidates into those lists and the
relevance back into an order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

from brain_search.errors import StoreUnavailable
from brain_search.retrieval.engine import queries
from brain_search.retrieval.engine.candidates import Candidate, CandidateFeatures, Ranked
from brain_search.retrieval.intent import QueryIntent
from brain_search.retrieval.score.answer_check import Asked, answers, asked
from brain_search.retrieval.score.conversations import asks_for_conversation, conversation_key
from brain_search.retrieval.score.ranking import RankingParams, embedding_similarity, lexical_precision, z_relevance
from brain_search.retrieval.score.zaxis import (
    EXACT_KINDS,
    Match,
    MatchKind,
    ZCalibration,
    ZFormula,
    match,
    query_terms_of,
)
from brain_search.retrieval.text import padded_text
from brain_search.retrieval.zscale import spec_z

Z_FORMULAS: Mapping[ZFormula, Callable[[float, float, Match], float]] = MappingProxyType(
    {
        # how the memory matches (``zaxis.match``): the default, what Z means in the spec's words
        ZFormula.calibrated: lambda lexical, semantic, m: m.z,
        # the spec's literal semantic / (lexical + semantic) (``zscale.spec_z``), on request
        ZFormula.spec: lambda lexical, semantic, m: spec_z(lexical, semantic),
    }
)
"""Each Z formula a request may name (``z_formula``) → a candidate's Z from its lexical precision,
its similarity and its match."""


def check_scores(candidates: Mapping[str, Candidate]) -> None:
    """Every candidate must hold both scores; a gap is a store failure, never a silent 0."""
    for c in candidates.values():
        if c.bm25 is None or c.cosine is None:
            raise StoreUnavailable(f"memory {c.doc_id} came back without its BM25 or cosine")


def matches(
    intent: QueryIntent,
    terms: Sequence[str],
    cands: Sequence[Candidate],
    cal: ZCalibration,
    *,
    term_idf: Mapping[str, float] | None = None,
) -> list[Match]:
    """How each candidate matches (``zaxis.match``): kind, calibrated Z, strength; the query's
    terms weigh their idf over the tenant's memories where ``term_idf`` has it."""
    q = query_terms_of(intent.lexical_query, intent.phrases, list(terms), cal.key_weight, idf=term_idf)
    names = [queries.term_name(i) for i in range(len(terms))]
    return [
        match(c.source.get("content", ""), q, [n in c.matched for n in names], c.cosine or 0.0, cal=cal) for c in cands
    ]


def features(
    intent: QueryIntent,
    terms: Sequence[str],
    cands: Sequence[Candidate],
    calibration: ZCalibration | None = None,
    *,
    formula: ZFormula = ZFormula.calibrated,
    term_idf: Mapping[str, float] | None = None,
) -> CandidateFeatures:
    """Lexical precision (phrase, term coverage, BM25), similarity, both raw engine scores and
    each candidate's match (kind, strength) and Z under ``formula``."""
    best_bm25 = max(((c.bm25 or 0.0) for c in cands), default=0.0) or 1.0
    # the quoted phrases, else the whole query, as a phrase (spec 3.1's 1.0); read once
    wanted = [padded_text(p) for p in intent.phrases or [intent.lexical_query]]
    names = [queries.term_name(i) for i in range(len(terms))]
    lex: list[float] = []
    sem: list[float] = []
    for c in cands:
        text = padded_text(c.source.get("content", ""))
        phrase_hit = all(p and p in text for p in wanted)
        coverage = sum(1 for n in names if n in c.matched) / len(names) if names else 0.0
        lex.append(lexical_precision(phrase_hit, coverage, (c.bm25 or 0.0) / best_bm25))
        sem.append(embedding_similarity(c.cosine or 0.0))
    cal = calibration or ZCalibration()
    found = matches(intent, terms, cands, cal, term_idf=term_idf)
    z_of = Z_FORMULAS[formula]
    zs = [z_of(lx, sm, m) for lx, sm, m in zip(lex, sem, found, strict=True)]
    return CandidateFeatures(
        ids=[str(c.source.get("memory_id", c.doc_id)) for c in cands],
        lexical=lex,
        semantic=sem,
        bm25=[c.bm25 or 0.0 for c in cands],
        cosine=[c.cosine or 0.0 for c in cands],
        in_lexical=[c.lexical_hit for c in cands],
        in_semantic=[c.semantic_hit for c in cands],
        z=zs,
        strength=[m.strength for m in found],
        kinds=[m.kind.value for m in found],
        nodes=[str(c.source.get("node_id") or c.doc_id) for c in cands],
        shown=[cal.clears_floor(m.kind, m.strength, m.sigma) for m in found],
        liftable=[cal.above_floor(m.kind, m.strength) for m in found],
    )


def relevance(intent: QueryIntent, f: CandidateFeatures, ranking: RankingParams, n_terms: int) -> list[float]:
    """Each candidate's Z-aware relevance for the query's target Z (``ranking.z_relevance``)."""
    return z_relevance(
        f.lexical,
        f.semantic,
        f.bm25,
        f.cosine,
        target_z=intent.target_z,
        tolerance=intent.z_tolerance,
        params=ranking,
        in_lexical=f.in_lexical,
        in_semantic=f.in_semantic,
        quoted=bool(intent.phrases),
        n_terms=n_terms,
        z_positions=f.z,
        nodes=f.nodes,
        liftable=f.liftable,
    )


def rank(
    intent: QueryIntent,
    terms: Sequence[str],
    cands: Sequence[Candidate],
    ranking: RankingParams,
    *,
    calibration: ZCalibration,
    formula: ZFormula = ZFormula.calibrated,
    term_idf: Mapping[str, float] | None = None,
) -> Ranked:
    """Every candidate scored and ordered (relevance, then the engine id: a total order); result
    models are built on demand (``Ranked.result``)."""
    cands = list(cands)
    if not cands:
        return Ranked([], [], [], [], [], [], [], [])
    f = features(intent, terms, cands, calibration, formula=formula, term_idf=term_idf)
    rel = relevance(intent, f, ranking, len(terms))
    order = sorted(range(len(cands)), key=lambda i: (-rel[i], cands[i].doc_id))
    kinds = [MatchKind(k) for k in f.kinds or []]
    strength = f.strength or [0.0] * len(cands)
    shown = (
        f.shown
        if f.shown is not None
        else [calibration.clears_floor(k, s) for k, s in zip(kinds, strength, strict=True)]
    )
    quoted = bool(intent.phrases)
    calibrated = [calibration.relevance(k, s, c, quoted) for k, s, c in zip(kinds, strength, shown, strict=True)]
    return Ranked(cands, f.lexical, f.semantic, f.z or [], rel, kinds, strength, order, calibrated, shown)


def score(
    intent: QueryIntent,
    terms: Sequence[str],
    cands: Sequence[Candidate],
    *,
    ranking: RankingParams,
    calibration: ZCalibration,
    formula: ZFormula,
    term_idf: Mapping[str, float] | None,
    query: str,
    name_counts: Callable[[str], tuple[int, int]] | None,
    newer: Mapping[str, str],
    drop: bool,
    theme: bool,
    chosen_z: bool,
) -> Ranked:
    """The score stage of a recall, in order: ``rank``, the current versions in their old ones'
    place (``inherit``; ``newer``: old memory id → the candidate that replaced it, none: no
    candidate was replaced; ``drop``: the replaced ones leave the order), what the floor reads
    (``floor_checks``), a theme's memories all matching it (``theme``: the recall is a theme
    recall, ``retrieval/question/theme.py``) and, for a target the caller chose (``chosen_z``),
    matches first (``floor_first``)."""
    ranked = rank(intent, terms, cands, ranking, calibration=calibration, formula=formula, term_idf=term_idf)
    if newer:
        inherit(ranked, newer, drop=drop)
    floor_checks(ranked, query, intent.cues, calibration, name_counts=name_counts)
    if theme:  # every memory of the theme matches it, and reads at least what the floor reads
        ranked.shown = [True] * len(ranked.cands)
        ranked.calibrated = [max(c, calibration.at_floor) for c in ranked.calibrated]
    if chosen_z:  # a chosen Z moves the emphasis, never a non-match above a match
        ranked.order = floor_first(ranked.order, ranked.shown)
    return ranked


def floor_first(order: Sequence[int], shown: Sequence[bool]) -> list[int]:
    """``order`` with the candidates that clear the relevance floor first, each group in its own
    order (pure): a chosen Z changes what comes first among matches and among the rest, and never
    puts a memory that does not match above one that does."""
    return [i for i in order if shown[i]] + [i for i in order if not shown[i]]


def conversations_asked(ranked: Ranked, calibration: ZCalibration) -> None:
    """In place, for a question that asks for a conversation ("what was that conversation
    about…", ``conversations.asks_for_conversation``): a memory that belongs to no conversation is not
    what was asked, so it does not clear the floor (its relevance reads as such), and the turns
    of conversations come before it within each floor group. Among the candidates of a tenant
    that stores no conversation at all nothing changes. "What was that conversation about
    changing jobs?" then answers with the job-offer conversation, not the memory of the first
    day at the new job."""
    turn = [conversation_key(c.source) is not None for c in ranked.cands]
    if not any(turn) or all(turn):
        return
    for i, is_turn in enumerate(turn):
        if not is_turn and ranked.shown[i]:
            ranked.shown[i] = False
            ranked.calibrated[i] = calibration.relevance(ranked.kinds[i], ranked.strength[i], False)
    turns_first = [i for i in ranked.order if turn[i]] + [i for i in ranked.order if not turn[i]]
    ranked.order = floor_first(turns_first, ranked.shown)


def floor_checks(
    ranked: Ranked,
    query: str,
    cues: Sequence[str],
    calibration: ZCalibration,
    *,
    name_counts: Callable[[str], tuple[int, int]] | None = None,
) -> None:
    """In place, what the floor reads beyond match strength: a question that names a conversation
    is answered with conversations (``conversations_asked``), and a memory must be able to answer
    what the question asks (``answer_checked``; ``name_counts``: a name → how many of the tenant's
    memories hold it and how many it has, when the tenant's statistics are at hand)."""
    if asks_for_conversation(query, cues):
        conversations_asked(ranked, calibration)
    question = asked(query)
    answer_checked(ranked, question if name_counts is None else question.without_common(name_counts), calibration)


def content_of(c: Candidate) -> str:
    return str(c.source.get("content", ""))


def answer_checked(ranked: Ranked, question: Asked, calibration: ZCalibration) -> None:
    """In place: a memory that clears the floor but cannot answer what the question asks
    (``answer_check.answers``: it mentions none of the names the question gives, not the person it
    names by role, or holds no figure where one is asked for) does not clear it, and its
    relevance reads as such. Exact matches are not checked; the order does not change."""
    if not question.checks:
        return
    for i, c in enumerate(ranked.cands):
        if ranked.shown[i] and ranked.kinds[i] not in EXACT_KINDS and not answers(question, content_of(c)):
            ranked.shown[i] = False
            ranked.calibrated[i] = calibration.relevance(ranked.kinds[i], ranked.strength[i], False)


class Kept(NamedTuple):
    """What a response shows of a ranking and what it says of the rest."""

    order: list[int]
    """the candidates shown, at most ``limit``, in ranked order"""
    withheld: int
    """of the first ``limit`` ranked, how many ``strict`` or ``min_relevance`` left out"""
    matched: int
    """candidates that clear the floor (0 exactly when nothing matched)"""
    withheld_matches: int
    """of the first ``limit`` that clear the floor, how many ``min_relevance`` left out"""


def kept_results(ranked: Ranked, strict: bool, min_relevance: float | None, limit: int | None = None) -> Kept:
    """The ranked order a response shows: all of it, or with ``strict`` only the candidates that
    clear the floor (never one that reads relevance 0), and with ``min_relevance`` only those
    whose calibrated relevance reaches it, at most ``limit``. With empty results,
    ``withheld_matches`` tells "matched, withheld by the caller's threshold" from "nothing
    matched" (``matched`` 0), issue 68."""

    def reaches(i: int) -> bool:
        return min_relevance is None or ranked.calibrated[i] >= min_relevance

    def matches(i: int) -> bool:
        return ranked.shown[i] and ranked.calibrated[i] > 0.0

    order = [i for i in ranked.order if (not strict or matches(i)) and reaches(i)][:limit]
    matched = [i for i in ranked.order if matches(i)]
    return Kept(
        order,
        withheld=len(ranked.order[:limit]) - len(order),
        matched=len(matched),
        withheld_matches=sum(1 for i in matched[:limit] if not reaches(i)),
    )


def inherit(ranked: Ranked, newer: Mapping[str, str], drop: bool) -> None:
    """In place: each current version of a fact ranks, matches and reads at least as well as
    what it replaced (``newer``: old memory id → the one that replaced it), and before it; with
    ``drop`` the replaced ones leave the order. "Where do I live?" finds the memory that replaced
    "I live in Berlin" even when it never says "live"."""
    ids = [str(c.source.get("memory_id", "")) for c in ranked.cands]
    pos = {m: i for i, m in enumerate(ids)}
    for i, m in enumerate(ids):
        j = pos.get(newer.get(m, ""))
        if j is None or j == i:
            continue
        ranked.relevance[j] = max(ranked.relevance[j], ranked.relevance[i])
        ranked.strength[j] = max(ranked.strength[j], ranked.strength[i])
        ranked.calibrated[j] = max(ranked.calibrated[j], ranked.calibrated[i])
        ranked.shown[j] = ranked.shown[j] or ranked.shown[i]
    old = [m in newer for m in ids]
    keep = [i for i in range(len(ids)) if not (drop and old[i])]
    ranked.order = sorted(keep, key=lambda i: (-ranked.relevance[i], old[i], ranked.cands[i].doc_id))
