"""Pure scoring over plain numbers: lexical precision, similarity, the Z-aware relevance.

No I/O here: the engine's BM25 and the vectors' cosines come in, numbers in [0, 1] go out.
The formulas and the learned numbers (``RankingParams``, ``ENCODER_RANKING``) live here, over
lists of floats; ``scoring.py`` applies them to a recall's candidates (features, the floor, the
order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from brain_search.retrieval.zscale import spec_z


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


def spec_z_relevance(lexical: float, semantic: float, z: float, target_z: float, *, tolerance: float) -> float:
    """The spec's ``z_relevance_score`` (3.3), literally."""
    distance = abs(z - target_z)
    base = lexical * (1 - target_z) + semantic * target_z
    if distance > tolerance:
        return base * 0.5
    return base * (1 - (distance / tolerance) * 0.3)


class RankingMode(StrEnum):
    fusion = "fusion"
    """the learned blend of both normalised engine scores, with the Z-alignment factor"""
    spec = "spec"
    """the spec's ``z_relevance_score`` (3.3), literally"""


class Normalisation(StrEnum):
    """Over which hits each engine score is min-max normalised (``RankingParams.norm``)."""

    sublist = "sublist"
    union = "union"
    bm25_sublist = "bm25-sublist"
    cosine_sublist = "cosine-sublist"


BM25_OVER_SUBLIST = frozenset({Normalisation.sublist, Normalisation.bm25_sublist})
COSINE_OVER_SUBLIST = frozenset({Normalisation.sublist, Normalisation.cosine_sublist})


@dataclass(frozen=True)
class RankingParams:
    """How candidates are ranked.

    ``spec`` is the spec's formula (3.3), literally. ``fusion`` blends the engine's two scores,
    each min-max normalised (``norm``), with a semantic weight set by the target Z, then applies
    the spec's Z-alignment penalty with strength ``z_penalty``:

    - ``norm="sublist"``: like OpenSearch's hybrid normalisation, BM25 is scaled over the BM25
      sub-search's hits and the cosine over the kNN sub-search's hits (min of that list → 0,
      max → 1); a candidate below a list's minimum (it was found by the other sub-search only)
      gets 0 there. ``norm="union"``: both over every candidate; ``bm25-sublist`` /
      ``cosine-sublist``: only that score over its sub-search, the other over every candidate.
      ``norm_depth`` > 0: a sub-search's range ends at its ``norm_depth``-th hit (as if it were that
      deep), so the scale does not depend on how many candidates the limit asked for.
    - semantic weight at target Z: ``sem_weight_mid + sem_weight_slope × (Z − 0.5)``, clipped
      to [0, 1] (the spec's blend is mid 0.5, slope 1: ``Z``); lexical weight = 1 − semantic.
    - ``lexical_anchor_weight`` mixes the lexical precision (term coverage, spec 3.1) into the
      lexical part.
    - ``term_scale`` > 0: for a query with more topic terms than that (a claim, a paragraph), the
      lexical anchor and the Z penalty shrink by ``term_scale / terms``: term coverage, and the Z
      position computed from it, say less when few memories could contain every term.
    - ``phrase_bonus``: added when the query quotes phrases and the memory contains all of them,
      so a memory holding the quote ranks above every memory that does not (spec: exact match);
      every relevance is then divided by ``1 + phrase_bonus``, so it stays within [0, 1].

    The defaults are learned on the dev splits only by ``brain-search eval --fit``
    (``lab/brain_lab/eval/fit.py``).
    """

    # Learned on the dev split only, over three datasets at once (LoCoMo conversations 0–6,
    # SciFact train qrels, RealMem's first five personas), with the tenant's own BM25, by
    # coordinate ascent on each dataset's R@10, nDCG@10 and MRR@10 margins over the same engine's
    # bare BM25 and min-max fusion (a shortfall weighs 3×). The fitting history: lab/reports/history/lab-2026-12.md,
    # "Ranking that generalises".
    mode: RankingMode = RankingMode.fusion
    norm: Normalisation = Normalisation.bm25_sublist
    norm_depth: int = 0
    sem_weight_mid: float = 0.6
    sem_weight_slope: float = 1.0
    z_penalty: float = 0.2
    outside_factor: float = 0.85
    lexical_anchor_weight: float = 0.9
    phrase_bonus: float = 1.0
    term_scale: int = 3
    # An explicit target (focus other than auto, or z_value) is the user saying where on the axis
    # they want results: there the spec's Z-distance penalty applies at its own strength (spec
    # 3.3), so "broad" really lifts conceptual memories over the literal match. Auto-detected
    # targets keep the learned strength above (light: on dev a stronger penalty cost relevance).
    explicit_z_penalty: float = 0.3
    explicit_outside_factor: float = 0.5
    # Beyond the tolerance of an explicit target the factor keeps falling with the distance, to
    # ``explicit_far_factor`` at distance 1: with Z meaning the kind of match, a Broad request must
    # push the literal match (Z ≈ 0.05) below theme matches, not merely halve it like a near miss.
    explicit_far_factor: float = 0.1
    # Node evidence (the X axis): a memory's relevance is blended with the best relevance among the
    # candidates of its knowledge-graph node, (own + node_lift × node's best) / (1 + node_lift).
    # A conversation's turns sit in the node of their session, and the evidence for a question
    # often sits beside the turn that matches it best (measured: lab/reports/history/lab-2026-12.md, "Ranking that
    # generalises", item 5). One node for everything (SciFact) or none is the same order.
    node_lift: float = 1.0
    far_factor: float | None = None
    """the Z-alignment factor at distance 1, linear from ``outside_factor`` at the tolerance;
    None: ``outside_factor`` all the way (the spec's flat × 0.5)"""

    def length_factor(self, n_terms: int) -> float:
        """1 for a query of at most ``term_scale`` topic terms, ``term_scale / n`` beyond (1 when 0)."""
        if self.term_scale <= 0 or n_terms <= self.term_scale:
            return 1.0
        return self.term_scale / n_terms

    def for_explicit_z(self) -> RankingParams:
        """The ranking for a target the caller chose (``focus``/``z_value``), not detected."""
        return replace(
            self,
            z_penalty=self.explicit_z_penalty,
            outside_factor=self.explicit_outside_factor,
            far_factor=self.explicit_far_factor,
        )

    def semantic_weight(self, target_z: float) -> float:
        w = self.sem_weight_mid + self.sem_weight_slope * (target_z - 0.5)
        return min(max(w, 0.0), 1.0)


# What an encoder's own dev fit changed from the defaults above (``brain-search eval --fit`` with
# that encoder; its cosines and their spread are its own). all-MiniLM-L6-v2 is the defaults.
ENCODER_RANKING: dict[str, dict[str, Any]] = {
    # e5-small-v2 ranks a detected target's memories without the target-Z terms (the semantic
    # weight does not follow the target, no Z penalty): its cosines carry what those terms add to
    # MiniLM's, and with them it ranked lower on the dev splits of all three datasets and over one
    # pool of every LoCoMo turn; read once on test: LoCoMo nDCG@10 0.587 -> 0.593, RealMem R@10
    # 0.290 -> 0.304, SciFact 0.738 -> 0.736 (lab/reports/history/lab-2026-12.md, "A fourth encoder").
    # An explicit target (focus, z_value) keeps its Z penalty (``for_explicit_z``).
    "e5-small-v2": {"sem_weight_slope": 0.0, "z_penalty": 0.0, "outside_factor": 1.0},
}
# multilingual-e5-small's and bge-small-en-v1.5's own dev fits did not carry to their test splits,
# so they rank with the defaults (lab/reports/history/lab-2026-12.md, "A multilingual encoder" and
# "A third encoder").
DEFAULT_NODE_LIFT = 1.0


def ranking_for(encoder: str, node_lift: float) -> RankingParams:
    """The learned ranking of ``encoder``; the settings' node lift (``BRAIN_NODE_LIFT``) where it
    is not the default, else the encoder's own."""
    fitted = replace(RankingParams(node_lift=DEFAULT_NODE_LIFT), **ENCODER_RANKING.get(encoder, {}))
    return fitted if node_lift == DEFAULT_NODE_LIFT else replace(fitted, node_lift=node_lift)


def minmax(values: Sequence[float]) -> list[float]:
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi - lo <= 1e-12:
        return [1.0 if hi > 0 else 0.0 for _ in values]
    return [(v - lo) / (hi - lo) for v in values]


def minmax_over(values: Sequence[float], members: Sequence[bool] | None, depth: int = 0) -> list[float]:
    """Min-max scaled by the range of the ``members`` (a sub-search's own hits), clipped to
    [0, 1]; every value when ``members`` is None or selects nothing. ``depth`` > 0: the range's
    low end is the ``depth``-th best member (the range of a sub-search ``depth`` deep)."""
    ref = [v for v, m in zip(values, members, strict=True) if m] if members is not None else []
    if not ref:
        return minmax(values)
    lo = sorted(ref, reverse=True)[min(depth, len(ref)) - 1] if depth > 0 else min(ref)
    hi = max(values)
    if hi - lo <= 1e-12:
        return [1.0 if v >= hi and hi > 0 else 0.0 for v in values]
    span = hi - lo
    return [min(max((v - lo) / span, 0.0), 1.0) for v in values]


def z_relevance(
    lexical: Sequence[float],
    semantic: Sequence[float],
    bm25: Sequence[float],
    cosine: Sequence[float],
    *,
    target_z: float,
    tolerance: float,
    params: RankingParams,
    in_lexical: Sequence[bool] | None = None,
    in_semantic: Sequence[bool] | None = None,
    quoted: bool = False,
    n_terms: int = 0,
    z_positions: Sequence[float] | None = None,
    nodes: Sequence[str] | None = None,
    liftable: Sequence[bool] | None = None,
) -> list[float]:
    """Relevance for each candidate (higher is better). All sequences are aligned by candidate.

    ``in_lexical`` / ``in_semantic``: whether each candidate is a hit of the BM25 / kNN
    sub-search (for ``norm="sublist"``). ``quoted``: the query quotes phrases, and a lexical
    precision of 1.0 means the memory contains them all. ``n_terms``: the query's topic terms.
    ``z_positions``: each candidate's Z position (the calibrated one, ``retrieval/score/zaxis.py``); None: the
    spec's ``semantic / (lexical + semantic)``. ``nodes``: each candidate's node (``node_lifted``;
    None: no node evidence); ``liftable``: which candidates the node may lift (those that match the
    query at all; None: every one). The phrase bonus is added after the node lift, so a memory holding
    the quote still ranks above every memory that does not."""
    if z_positions is not None:
        zs = list(z_positions)
    else:
        zs = [spec_z(lx, sm) for lx, sm in zip(lexical, semantic, strict=True)]
    if params.mode is RankingMode.spec:
        return [
            spec_z_relevance(lx, sm, z, target_z, tolerance=tolerance)
            for lx, sm, z in zip(lexical, semantic, zs, strict=True)
        ]
    depth = params.norm_depth
    lex_n = minmax_over(bm25, in_lexical, depth) if params.norm in BM25_OVER_SUBLIST else minmax(bm25)
    sem_n = minmax_over(cosine, in_semantic, depth) if params.norm in COSINE_OVER_SUBLIST else minmax(cosine)
    w_sem = params.semantic_weight(target_z)
    scale = params.length_factor(n_terms)
    anchor = params.lexical_anchor_weight * scale
    align = (
        params
        if scale == 1.0
        else replace(params, z_penalty=params.z_penalty * scale, outside_factor=1 - (1 - params.outside_factor) * scale)
    )
    bonus = params.phrase_bonus if quoted else 0.0
    out = []
    for i, z in enumerate(zs):
        lex_part = (1 - anchor) * lex_n[i] + anchor * lexical[i]
        base = (1 - w_sem) * lex_part + w_sem * sem_n[i]
        out.append(base * z_alignment(z, target_z, tolerance, align))
    if nodes is not None and params.node_lift > 0:
        out = node_lifted(out, nodes, params.node_lift, liftable)
    if bonus:  # holders of every quoted phrase first; divided so relevance stays within [0, 1]
        out = [(rel + bonus if lx >= 1.0 else rel) / (1 + bonus) for rel, lx in zip(out, lexical, strict=True)]
    return out


def node_lifted(
    relevance: Sequence[float], nodes: Sequence[str], weight: float, liftable: Sequence[bool] | None = None
) -> list[float]:
    """Each relevance blended with the best among its node's: ``(own + weight × best) / (1 +
    weight)``. A memory alone in its node keeps its own, and so does one that is not
    ``liftable`` (it does not match the query at all: a node is a folder of a person's knowledge,
    and an unrelated note beside a strong match must not rise above a real answer elsewhere). One
    node for every liftable candidate keeps their order; the values stay within the inputs' range."""
    best: dict[str, float] = {}
    for r, n in zip(relevance, nodes, strict=True):
        if n not in best or r > best[n]:
            best[n] = r
    can = liftable if liftable is not None else [True] * len(relevance)
    return [(r + weight * best[n]) / (1 + weight) if ok else r for r, n, ok in zip(relevance, nodes, can, strict=True)]


def z_alignment(z: float, target_z: float, tolerance: float, params: RankingParams) -> float:
    """The spec's Z penalty with tunable strength: 1 at the target, falling linearly by
    ``z_penalty`` to the tolerance edge, ``outside_factor`` beyond it (falling on to ``far_factor``
    at distance 1 where that is set)."""
    distance = abs(z - target_z)
    if distance > tolerance:
        if params.far_factor is None or tolerance >= 1.0:
            return params.outside_factor
        beyond = min((distance - tolerance) / (1.0 - tolerance), 1.0)
        return params.outside_factor + (params.far_factor - params.outside_factor) * beyond
    return 1 - params.z_penalty * (distance / tolerance)
