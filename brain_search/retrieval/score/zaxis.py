"""The Z axis, calibrated: *how* a memory matches a query (pure functions over plain data). The
numbers of the axis (each kind's band, the tiers, the presets) are ``retrieval/zscale.py``'s; this
module reads them and decides where a memory falls.

Z says what kind of match a memory is; ``relevance`` says how good. The spec's literal formula,
``semantic / (lexical + semantic)`` over raw MiniLM cosines, measures how weak the semantic side
is instead: a literal hit has a cosine of 0.6–0.9, so its Z is 0.4–0.5; a stray keyword hit has a
cosine near 0.1, so its Z is about 0.2 ("Exact"); a memory sharing no word is always 1.0. It stays
selectable (``ZFormula.spec``) for comparison. The calibrated Z follows the spec's meaning
(section 2, the 5.3 picture); each kind's place on the axis is read from ``zscale`` (this module
decides which kind a memory is, and how far along its band):

- **Exact, Z < 0.3**: the memory holds the quoted phrase, or the cue-stripped query as a phrase
  (Z 0.05), or every content word of the query literally, close together (0.10–0.25, tighter is
  lower). A high cosine never moves it out.
- **Precise, 0.3–0.5**: it holds at least ``precise_share`` (0.45) of the weight of the query's
  terms (each weighs its idf over the tenant's memories; stemmed forms count), 0.30 when it holds
  all of them.
- **0.5–0.7**: mostly other words, close in meaning: Z = 0.5 + 0.5 × (1 − σ) × (1 − λ), where σ
  is the calibrated cosine and λ the share of terms it does share.
- **≥ 0.7**: related in theme only (σ lower, no key terms shared).

The cosine is calibrated against the cosines of *unrelated* memories (``ZCalibration``: on the
dev split, a query against the memories of other tenants): σ = 0 at the unrelated median, 1 at
``cos_strong``. Match strength (0–1) is how sure we are that the memory matches at all; tiers show
only memories whose strength clears ``floor`` (exact matches always do), and a response whose best
candidate does not clear it says "nothing matched".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import Any

from brain_search.models import MatchKind, ZFormula
from brain_search.retrieval.text import normalize_text, padded_text
from brain_search.retrieval.zscale import PHRASE_Z, meaning_z, terms_z, words_z

__all__ = ["Match", "MatchKind", "QueryTerms", "ZCalibration", "ZFormula", "match", "query_terms_of"]


EXACT_KINDS = frozenset({MatchKind.phrase, MatchKind.words})


@dataclass(frozen=True)
class ZCalibration:
    """Constants of the calibrated Z, fitted on the dev split (``brain-search eval --parts z``).

    ``cos_unrelated``: the median cosine between a query and unrelated memories (other tenants'
    LoCoMo turns, SciFact abstracts of other claims); ``cos_strong``: a cosine that counts as
    "the same thing" (σ = 1). ``precise_share``: the weighted share of terms a Precise match
    shares at least (each term weighs its idf over the tenant's memories; without tenant
    statistics a name or a number weighs ``key_weight`` and any other term 1). ``window``: the
    words in which all content words must fall for an Exact match, per content word.
    ``floor``: the match strength a memory needs to appear in a tier.
    """

    cos_unrelated: float = 0.105
    cos_strong: float = 0.505
    precise_share: float = 0.45
    key_weight: float = 2.0
    window: float = 4.0
    floor: float = 0.266
    lexical_weight: float = 0.6
    meaning_sigma: float = 0.5
    """a match in other words clears the floor only at this calibrated cosine or above"""
    relevance_knots: tuple[tuple[float, float], ...] = ((0.0, 0.0), (1.0, 1.0))
    """(match strength, chance) knots, strength ascending: the calibrated relevance, interpolated
    linearly (``fit_relevance_curve`` in the lab)"""
    phrase_relevance: float = 0.99
    """what a memory that holds the query's quoted phrase reads: the memory a quoted phrase came
    from is first for 600 of 600 phrases on the dev split (LoCoMo and SciFact, exact-match P@1;
    95 % lower bound 0.994). The knots are fitted on questions, where even a strong match in
    other words is the answer two times in three (MiniLM's top at 0.65): they do not describe a
    quote, and ``min_relevance: 0.7`` dropped one (issue 68)"""

    @classmethod
    def from_settings(cls, settings: Any) -> ZCalibration:
        """The calibration of ``Settings`` (``z_cos_unrelated``, ``z_cos_strong``, ``z_floor``,
        ``z_key_weight``, ``z_precise_share``); the three cosine-bound ones default to the values
        fitted for the settings' encoder (``EncoderInfo``)."""
        from brain_search.encoders.base import encoder_info

        fitted = encoder_info(settings.embedding_model)
        return cls(
            cos_unrelated=fitted.cos_unrelated if settings.z_cos_unrelated is None else settings.z_cos_unrelated,
            cos_strong=fitted.cos_strong if settings.z_cos_strong is None else settings.z_cos_strong,
            floor=fitted.z_floor if settings.z_floor is None else settings.z_floor,
            key_weight=settings.z_key_weight,
            precise_share=settings.z_precise_share,
            relevance_knots=fitted.relevance_knots,
        )

    def above_floor(self, kind: MatchKind, strength: float) -> bool:
        """An exact match, or any other at ``strength`` ≥ ``floor`` (what the ranking lets its node
        lift)."""
        return kind in EXACT_KINDS or strength >= self.floor

    def clears_floor(self, kind: MatchKind, strength: float, sigma: float = 1.0) -> bool:
        """A memory matches (it shows in a tier, strict mode keeps it, and a recall none of whose
        memories does says "nothing matched"): an exact match always; a match on most of the
        query's terms at ``strength`` ≥ ``floor``; a match in other words (``meaning``) only when,
        beyond that, its cosine is at least ``meaning_sigma`` of the way from unrelated memories'
        to a relevant one's (``sigma``). One shared word with a middling cosine lifts a memory
        over the floor by strength alone ("What is my blood type?" and a blood-pressure reading);
        the cosine must then say the same. No parameter of its own: 0.5 is the midpoint of the
        two cosines the dev split fitted (``cos_unrelated``, ``cos_strong``)."""
        if kind in EXACT_KINDS:
            return True
        if strength < self.floor:
            return False
        return kind != MatchKind.meaning or sigma >= self.meaning_sigma

    def relevance(self, kind: MatchKind, strength: float, clears: bool | None = None, quoted: bool = False) -> float:
        """The calibrated relevance (0–1) of a match of ``kind`` and ``strength``: the chance that
        a memory at that strength is relevant rather than unrelated, the two equally likely a priori
        (fitted on the dev split: ``relevance_knots``, linear between knots). An exact match reads
        at least what the floor reads: it always clears it; one that holds the query's quoted phrase
        (``quoted``: the query quotes one) reads ``phrase_relevance``. A memory that does not clear the floor
        (``clears`` False: a match in other words whose cosine does not say so, ``clears_floor``)
        reads at most what the floor reads, so a relevance at or above the floor's reading is one
        that clears it."""
        value = interpolate(self.relevance_knots, strength)
        at_floor = self.at_floor
        if kind == MatchKind.phrase and quoted and clears is not False:
            return max(value, at_floor, self.phrase_relevance)
        if kind in EXACT_KINDS:
            return max(value, at_floor)
        return min(value, at_floor) if clears is False else value

    @property
    def at_floor(self) -> float:
        """The relevance a match at the floor reads: what every memory that clears it reads at least."""
        return interpolate(self.relevance_knots, self.floor)

    @cached_property
    def _strong(self) -> float:
        """The strength of a memory at ``cos_strong`` sharing no word (within the floor's bounds)."""
        f = min(max(self.floor, 1e-6), 1 - 2e-6)
        return min(max(self.strength(self.cos_strong, 0.0), f + 1e-6), 1 - 1e-6)

    def sigma(self, cosine: float) -> float:
        """The cosine placed against unrelated memories' cosines: 0 at their median, 1 at
        ``cos_strong`` (what a relevant memory typically has)."""
        span = max(self.cos_strong - self.cos_unrelated, 1e-6)
        return min(max((cosine - self.cos_unrelated) / span, 0.0), 1.0)

    def strength(self, cosine: float, shared: float) -> float:
        """How sure we are that a memory matches at all (0–1): its cosine placed between the
        unrelated median (0) and identity (1), raised by the share of the query's terms it holds
        (``lexical_weight`` of the way to 1 when it holds all). It saturates only at a cosine of 1,
        so the best candidate's strength still tells a strong match from a fair one."""
        s = min(max((cosine - self.cos_unrelated) / max(1.0 - self.cos_unrelated, 1e-6), 0.0), 1.0)
        return s + (1 - s) * self.lexical_weight * shared

    def meaning_z(self, strength: float) -> float:
        """Z of a match in mostly other words, by its strength (``zscale.meaning_z``: 0.9 at the
        floor, 0.55 at the strength of a memory at ``cos_strong`` sharing no word, 0.5 at strength
        1; below the floor up to 1.0 at strength 0)."""
        return meaning_z(strength, min(max(self.floor, 1e-6), 1 - 2e-6), self._strong)


def interpolate(knots: Sequence[tuple[float, float]], x: float) -> float:
    """Piecewise-linear through ``knots`` (x ascending), flat beyond the first and last (pure)."""
    if not knots:
        return 0.0
    if x <= knots[0][0]:
        return knots[0][1]
    for (x0, y0), (x1, y1) in pairwise(knots):
        if x <= x1:
            return y0 if x1 <= x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return knots[-1][1]


@dataclass(frozen=True)
class QueryTerms:
    """What a query asks for literally: its content terms (normalised) with weights, and its
    phrases (quoted ones, else the whole cue-stripped query when it has two or more words)."""

    terms: tuple[str, ...]
    weights: tuple[float, ...]
    phrases: tuple[str, ...]
    quoted: bool

    @cached_property
    def total_weight(self) -> float:
        return sum(self.weights)

    @cached_property
    def padded_phrases(self) -> tuple[str, ...]:
        """``phrases`` as ``ranking.padded_text`` writes them (read for every candidate)."""
        return tuple(padded_text(p) for p in self.phrases)


_DIGIT = re.compile(r"\d")
_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]*")


MIN_TERM_WEIGHT = 0.05
"""the least a term weighs (a word that every memory of the tenant holds has an idf near 0)"""


_GROUPED_NUMBER = re.compile(r"\d{1,3}(?:[,.\u202f ]\d{3})+")


def number_fragments(text: str) -> frozenset[str]:
    """The digit groups after the first of each grouped number ("235,000" → {"000"}): the
    normalised query splits them into words of their own, but "000" names no number (pure)."""
    out: set[str] = set()
    for m in _GROUPED_NUMBER.finditer(text):
        out.update(re.split(r"[,.\u202f ]", m.group())[1:])
    return frozenset(out)


def query_terms_of(
    lexical_query: str,
    phrases: Sequence[str],
    terms: Sequence[str],
    key_weight: float = 2.0,
    *,
    idf: Mapping[str, float] | None = None,
) -> QueryTerms:
    """``terms``: the query's topic words as the pipeline sends them to the engine (``query_terms``).

    What a term weighs in the share a memory holds: its idf over the tenant's own memories where
    ``idf`` has it (tenant statistics), so the words that pick a memory out count and a word that
    most memories hold counts little (a chat speaker's name, in every turn of theirs). Without
    ``idf``: a term with a digit, or written capitalised in the query (not "I"), is a key term (a
    name, a number) and weighs ``key_weight``, any other 1. The later digit groups of a grouped
    number ("000" of "235,000") weigh the least a term can (``number_fragments``)."""
    fragments = number_fragments(lexical_query)
    if idf is not None and all(t in idf for t in terms):
        weights = tuple(MIN_TERM_WEIGHT if t in fragments else max(idf[t], MIN_TERM_WEIGHT) for t in terms)
    else:
        capitalised = {
            w
            for m in _CAPITALISED.finditer(lexical_query)
            if m.group() != "I"
            for w in normalize_text(m.group()).split()
        }  # "Jacob's" reads as "jacob s": the name is "jacob"
        weights = tuple(
            MIN_TERM_WEIGHT if t in fragments else key_weight if (_DIGIT.search(t) or t in capitalised) else 1.0
            for t in terms
        )
    if phrases:
        return QueryTerms(tuple(terms), weights, tuple(phrases), True)
    whole = normalize_text(lexical_query)
    implicit = (whole,) if len(whole.split()) >= 2 else ()
    return QueryTerms(tuple(terms), weights, implicit, False)


@dataclass(frozen=True)
class Match:
    """How one memory matches: its kind, Z (0–1), strength (0–1) and the shares it was read from."""

    kind: MatchKind
    z: float
    strength: float
    shared: float
    """weighted share of the query's terms the memory holds (literally or stemmed), 0–1"""
    sigma: float
    """the calibrated cosine, 0–1"""

    @property
    def exact(self) -> bool:
        return self.kind in EXACT_KINDS


@lru_cache(maxsize=8192)
def _words(content: str) -> tuple[str, tuple[str, ...], frozenset[str]]:
    """The normalised text of a memory between two spaces (``ranking.padded_text``, shared with
    the lexical precision), its words and their set (cached: the same memories come back across
    recalls, and every candidate is matched against each query)."""
    padded = padded_text(content)
    words = tuple(padded.split())
    return padded, words, frozenset(words)


def literal_span(words: Sequence[str], terms: Sequence[str]) -> int | None:
    """The fewest consecutive words of ``words`` that hold every term of ``terms`` (None if a term
    is missing). Linear in ``len(words)`` (a sliding window)."""
    need = set(terms)
    if not need:
        return None
    if not need.issubset(words):
        return None
    count: dict[str, int] = {}
    have = 0
    best: int | None = None
    left = 0
    for right, w in enumerate(words):
        if w in need:
            count[w] = count.get(w, 0) + 1
            if count[w] == 1:
                have += 1
        while have == len(need):
            size = right - left + 1
            best = size if best is None or size < best else best
            lw = words[left]
            if lw in need:
                count[lw] -= 1
                if count[lw] == 0:
                    have -= 1
            left += 1
    return best


def match(
    content: str,
    q: QueryTerms,
    stemmed_hits: Sequence[bool],
    cosine: float,
    *,
    cal: ZCalibration,
) -> Match:
    """The calibrated Z of one memory. ``stemmed_hits``: per term of ``q``, whether the engine's
    English analyzer found it in the memory (``matched_queries``); ``cosine``: raw, −1…1."""
    padded, words, present = _words(content)
    literal = [t in present for t in q.terms]
    total = q.total_weight
    held = sum(w for w, a, b in zip(q.weights, literal, stemmed_hits, strict=True) if a or b)
    shared = held / total if total else 0.0
    sigma = cal.sigma(cosine)

    if q.phrases and all(p and p in padded for p in q.padded_phrases):
        return Match(MatchKind.phrase, PHRASE_Z, 1.0, 1.0, sigma)
    n = len(q.terms)
    if n and all(literal):
        span = literal_span(words, q.terms)
        if span is not None and span <= max(cal.window * n, 2):
            tight = (span - n) / max(cal.window * n - n, 1)
            return Match(MatchKind.words, round(words_z(tight), 4), 1.0, 1.0, sigma)
    strength = cal.strength(cosine, shared)
    if shared >= cal.precise_share and strength >= cal.floor and any(stemmed_hits):  # lexical 0: no terms match
        return Match(MatchKind.terms, round(terms_z(shared, cal.precise_share), 4), strength, shared, sigma)
    return Match(MatchKind.meaning, round(cal.meaning_z(strength), 4), strength, shared, sigma)
