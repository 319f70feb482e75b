"""Pure scoring over plain numbers: lexical precision, Z position, Z-aware relevance, tiers.

No I/O here: the engine's BM25 and the vectors' cosines come in, numbers in [0, 1] go out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

_NON_ALNUM = re.compile(r"[^\w]+", re.UNICODE)

# Words that carry no topic; they do not count as query terms for coverage.
STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then there
    these they this to was will with i me my mine we us our you your he him his she her it its them what
    which who whom whose when where why how do does did done have has had having am been being can could
    would should shall may might must about any some all just so than too very again also up down out
    over under s t don't didn't i'm i've we're""".split()
)


@lru_cache(maxsize=8192)
def normalize_text(text: str) -> str:
    """Lower-case, punctuation and whitespace folded to single spaces (for phrase containment).

    Cached: a recall tests each candidate against the same phrases, and the same memories come
    back across recalls."""
    return " ".join(_NON_ALNUM.sub(" ", text.lower().replace("_", " ")).split())


def contains_phrase(content: str, phrase: str) -> bool:
    """True when ``phrase`` occurs in ``content`` on word boundaries, case/punctuation-insensitive."""
    p = normalize_text(phrase)
    return bool(p) and f" {p} " in f" {normalize_text(content)} "


def query_terms(text: str, limit: int = 16) -> list[str]:
    """Distinct topic words of a query, in order (stopwords dropped unless nothing else is left)."""
    words = [w for w in normalize_text(text).split() if w]
    terms = [w for w in words if w not in STOPWORDS]
    chosen = terms or words
    return list(dict.fromkeys(chosen))[:limit]


def lexical_precision(phrase_match: bool, coverage: float, bm25_norm: float) -> float:
    """Lexical precision in [0, 1] (spec 3.1 anchors).

    - 1.0: the quoted phrase (or, unquoted, the cue-stripped query) occurs in the content;
    - 0.80–0.95: every query term is present, rising with the engine's BM25;
    - 0.2–0.8: partial overlap (0.45–0.55 at half the terms), rising with coverage and BM25;
    - 0.0: no query term present.

    ``coverage``: share of query terms present (0–1). ``bm25_norm``: the engine's BM25 score
    divided by the best BM25 among this query's candidates (0–1); monotone in BM25.
    """
    if phrase_match:
        return 1.0
    c = min(max(coverage, 0.0), 1.0)
    s = min(max(bm25_norm, 0.0), 1.0)
    if c <= 0.0:
        return 0.0
    if c >= 1.0:
        return 0.8 + 0.15 * s
    return 0.2 + 0.5 * c + 0.1 * s


def embedding_similarity(cosine: float) -> float:
    """Cosine similarity clamped to [0, 1]."""
    return min(max(cosine, 0.0), 1.0)


def z_position(lexical: float, semantic: float) -> float:
    """semantic / (lexical + semantic); 0.5 when both are 0 (spec 3.1)."""
    total = lexical + semantic
    if total <= 0.0:
        return 0.5
    return semantic / total


def spec_z_relevance(lexical: float, semantic: float, z: float, target_z: float, tolerance: float) -> float:
    """The spec's ``z_relevance_score`` (3.3), literally."""
    distance = abs(z - target_z)
    base = lexical * (1 - target_z) + semantic * target_z
    if distance > tolerance:
        return base * 0.5
    return base * (1 - (distance / tolerance) * 0.3)


@dataclass(frozen=True)
class RankingParams:
    """How candidates are ranked. ``spec`` is the spec's formula; ``fusion`` blends the
    per-query min-max normalised engine scores (BM25, cosine) with weights set by the target Z,
    then applies the spec's Z-alignment penalty with strength ``z_penalty``."""

    mode: str = "fusion"
    z_penalty: float = 0.3
    outside_factor: float = 0.5
    lexical_anchor_weight: float = 0.0

    def spec(self) -> RankingParams:
        return RankingParams(mode="spec", z_penalty=0.3, outside_factor=0.5)


def minmax(values: Sequence[float]) -> list[float]:
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi - lo <= 1e-12:
        return [1.0 if hi > 0 else 0.0 for _ in values]
    return [(v - lo) / (hi - lo) for v in values]


def z_relevance(
    lexical: Sequence[float],
    semantic: Sequence[float],
    bm25: Sequence[float],
    cosine: Sequence[float],
    target_z: float,
    tolerance: float,
    params: RankingParams,
) -> list[float]:
    """Relevance for each candidate (higher is better). All sequences are aligned by candidate."""
    zs = [z_position(lx, sm) for lx, sm in zip(lexical, semantic, strict=True)]
    if params.mode == "spec":
        return [
            spec_z_relevance(lx, sm, z, target_z, tolerance) for lx, sm, z in zip(lexical, semantic, zs, strict=True)
        ]
    lex_n = minmax(bm25)
    sem_n = minmax(cosine)
    out = []
    for i, z in enumerate(zs):
        lex_part = (1 - params.lexical_anchor_weight) * lex_n[i] + params.lexical_anchor_weight * lexical[i]
        base = (1 - target_z) * lex_part + target_z * sem_n[i]
        out.append(base * z_alignment(z, target_z, tolerance, params))
    return out


def z_alignment(z: float, target_z: float, tolerance: float, params: RankingParams) -> float:
    """The spec's Z penalty with tunable strength: 1 at the target, falling linearly by
    ``z_penalty`` to the tolerance edge, ``outside_factor`` beyond it."""
    distance = abs(z - target_z)
    if distance > tolerance:
        return params.outside_factor
    return 1 - params.z_penalty * (distance / tolerance)


TIER_NAMES = ("exact_matches", "precise_matches", "semantic_matches", "conceptual_matches")


def tier_of(z: float) -> str:
    """Spec 3.4: exact Z<0.3, precise 0.3≤Z<0.5, semantic 0.5≤Z<0.7, conceptual Z≥0.7."""
    if z < 0.3:
        return "exact_matches"
    if z < 0.5:
        return "precise_matches"
    if z < 0.7:
        return "semantic_matches"
    return "conceptual_matches"
