import pytest

from brain_search.retrieval.score.ranking import (
    RankingParams,
    embedding_similarity,
    lexical_precision,
    minmax_over,
    node_lifted,
    spec_z_relevance,
    z_relevance,
)
from brain_search.retrieval.score.tiers import tier_of
from brain_search.retrieval.text import padded_text, query_terms
from brain_search.retrieval.zscale import spec_z


def test_lexical_precision_anchors() -> None:
    assert lexical_precision(True, 0.0, 0.0) == 1.0
    assert lexical_precision(False, 1.0, 0.0) >= 0.8
    assert lexical_precision(False, 1.0, 1.0) < 1.0
    assert lexical_precision(False, 0.5, 0.5) == pytest.approx(0.5, abs=0.06)
    assert lexical_precision(False, 0.0, 0.7) == 0.0


def test_lexical_precision_monotone_in_bm25_for_equal_coverage() -> None:
    for cov in (0.25, 0.5, 0.99, 1.0):
        values = [lexical_precision(False, cov, s / 10) for s in range(11)]
        assert values == sorted(values)
        assert len(set(values)) == 11
    # more coverage never scores below less coverage
    assert lexical_precision(False, 0.99, 1.0) <= lexical_precision(False, 1.0, 0.0)


def test_phrase_containment_normalises_case_space_punctuation() -> None:
    def contains_phrase(content: str, phrase: str) -> bool:  # how scoring.features reads a phrase
        p = padded_text(phrase)
        return bool(p) and p in padded_text(content)

    assert contains_phrase("The equity split is 53% for me", "53%  FOR me")
    assert contains_phrase("He said: 'ship it, now!'", "ship it now")
    assert not contains_phrase("shipit now", "ship it")
    assert not contains_phrase("equity", "")


def test_query_terms_drop_stopwords() -> None:
    assert query_terms("what did we discuss about the CTO offer") == ["discuss", "cto", "offer"]
    assert query_terms("what is it") == ["what", "is", "it"]


def test_similarity_and_z() -> None:
    assert embedding_similarity(-0.2) == 0.0 and embedding_similarity(1.3) == 1.0
    assert spec_z(0.0, 0.0) == 0.5
    assert spec_z(1.0, 0.0) == 0.0 and spec_z(0.0, 0.7) == 1.0
    assert spec_z(0.85, 0.72) == pytest.approx(0.72 / 1.57)


def test_spec_relevance_literal() -> None:
    assert spec_z_relevance(1.0, 0.0, 0.0, 0.0, tolerance=0.2) == 1.0
    assert spec_z_relevance(1.0, 0.0, 0.0, 0.5, tolerance=0.2) == pytest.approx(0.25)  # outside tolerance: halved


def test_tiers_boundaries() -> None:
    assert [tier_of(z) for z in (0.0, 0.29, 0.3, 0.49, 0.5, 0.69, 0.7, 1.0)] == [
        "exact_matches",
        "exact_matches",
        "precise_matches",
        "precise_matches",
        "semantic_matches",
        "semantic_matches",
        "conceptual_matches",
        "conceptual_matches",
    ]


def test_target_z_moves_ranking_between_lexical_and_semantic() -> None:
    # candidate 0: strong lexical, weak semantic; candidate 1: the opposite
    lex, sem, bm25, cos = [0.95, 0.1], [0.3, 0.8], [9.0, 1.0], [0.3, 0.8]
    exact = z_relevance(lex, sem, bm25, cos, target_z=0.1, tolerance=0.15, params=RankingParams())
    broad = z_relevance(lex, sem, bm25, cos, target_z=0.9, tolerance=0.15, params=RankingParams())
    assert exact[0] > exact[1] and broad[1] > broad[0]
    spec = z_relevance(lex, sem, bm25, cos, target_z=0.1, tolerance=0.15, params=RankingParams(mode="spec"))
    assert spec[0] > spec[1]


def test_minmax_over_uses_the_sub_search_range() -> None:
    # members 0-2 are the sub-search's hits (range 4..10); member 3 came from the other search
    assert minmax_over([10.0, 7.0, 4.0, 1.0], [True, True, True, False]) == pytest.approx([1.0, 0.5, 0.0, 0.0])
    # depth 2: the range ends at the second best hit, lower ones clip to 0
    assert minmax_over([10.0, 7.0, 4.0, 1.0], [True, True, True, False], depth=2) == pytest.approx([1, 0, 0, 0])
    # no membership known: plain min-max over every value
    assert minmax_over([10.0, 7.0, 4.0, 1.0], None) == pytest.approx([1.0, 2 / 3, 1 / 3, 0.0])


def test_semantic_weight_rises_with_target_z() -> None:
    p = RankingParams()
    weights = [p.semantic_weight(z / 10) for z in range(11)]
    assert weights == sorted(weights) and weights[0] < weights[-1]
    assert all(0.0 <= w <= 1.0 for w in weights)
    assert RankingParams(sem_weight_mid=0.5, sem_weight_slope=1.0).semantic_weight(0.3) == pytest.approx(0.3)


def test_quoted_phrase_bonus_puts_the_containing_memory_first() -> None:
    # candidate 1 contains the quoted phrase (lexical precision 1.0) but scores lower otherwise
    # (BM25 in the lexical part: at the learned anchor weight of 1.0 the lexical precision alone
    # would already put it first)
    lex, sem, bm25, cos = [0.9, 1.0], [0.9, 0.2], [9.0, 5.0], [0.9, 0.2]
    p = RankingParams(lexical_anchor_weight=0.5)
    plain = z_relevance(lex, sem, bm25, cos, target_z=0.1, tolerance=0.15, params=p, quoted=False)
    quoted = z_relevance(lex, sem, bm25, cos, target_z=0.1, tolerance=0.15, params=p, quoted=True)
    assert plain[0] > plain[1]
    assert quoted[1] > quoted[0]
    assert all(0.0 <= r <= 1.0 for r in quoted)  # relevance stays within [0, 1] with the bonus


def test_node_lift_lifts_the_best_memorys_node_mates() -> None:
    rel = [0.9, 0.4, 0.5, 0.3]
    nodes = ["s1", "s1", "s2", "s3"]
    lifted = node_lifted(rel, nodes, 1.0)
    assert lifted == pytest.approx([0.9, 0.65, 0.5, 0.3])  # alone in a node: its own relevance
    assert lifted[1] > lifted[2]  # beside the best match now ranks above a weaker node's best
    # one node for every candidate (SciFact's corpus) keeps the order
    same = node_lifted(rel, ["n"] * 4, 1.0)
    assert sorted(range(4), key=lambda i: -same[i]) == sorted(range(4), key=lambda i: -rel[i])
    assert node_lifted(rel, nodes, 0.0) == rel


def test_node_lift_keeps_a_quoted_phrase_holder_first() -> None:
    # candidate 2 holds the quote (lexical precision 1.0) alone in its node; candidate 1 does not,
    # but shares a node with a strong candidate 0 that does
    lex, sem, bm25, cos = [1.0, 0.6, 1.0], [0.9, 0.5, 0.1], [9.0, 6.0, 2.0], [0.9, 0.5, 0.1]
    rel = z_relevance(
        lex, sem, bm25, cos, target_z=0.1, tolerance=0.15, params=RankingParams(), quoted=True, nodes=["a", "a", "b"]
    )
    assert rel[2] > rel[1] and rel[0] > rel[1]


def test_every_norm_mode_ranks() -> None:
    lex, sem, bm25, cos = [0.95, 0.1, 0.5], [0.3, 0.8, 0.5], [9.0, 0.0, 4.0], [0.3, 0.8, 0.5]
    for norm in ("sublist", "union", "bm25-sublist", "cosine-sublist"):
        p = RankingParams(norm=norm)
        rel = z_relevance(
            lex,
            sem,
            bm25,
            cos,
            target_z=0.5,
            tolerance=0.2,
            params=p,
            in_lexical=[True, False, True],
            in_semantic=[False, True, True],
        )
        assert len(rel) == 3 and all(r >= 0 for r in rel)


def test_long_queries_lean_less_on_term_coverage() -> None:
    p = RankingParams(term_scale=4)
    assert p.length_factor(3) == 1.0 and p.length_factor(4) == 1.0
    assert p.length_factor(8) == pytest.approx(0.5)
    assert RankingParams(term_scale=0).length_factor(50) == 1.0
    # candidate 0: every term (high lexical precision), weak BM25; candidate 1: strong BM25
    lex, sem, bm25, cos = [0.95, 0.5], [0.5, 0.5], [4.0, 10.0], [0.5, 0.5]
    short = z_relevance(lex, sem, bm25, cos, target_z=0.3, tolerance=0.2, params=p, n_terms=3)
    long = z_relevance(lex, sem, bm25, cos, target_z=0.3, tolerance=0.2, params=p, n_terms=16)
    assert short[0] - short[1] > long[0] - long[1]


def test_a_partial_or_failed_sub_search_is_a_failure_not_fewer_hits() -> None:
    from brain_search.errors import StoreUnavailable
    from brain_search.retrieval.engine.shards import complete

    ok = {"_shards": {"total": 3, "successful": 3, "failed": 0}, "timed_out": False, "hits": {"hits": []}}
    assert complete(ok) == (ok, None)
    failed = {
        "_shards": {"total": 3, "successful": 2, "failed": 1, "failures": [{"reason": {"reason": "node left"}}]},
        "timed_out": False,
        "hits": {"hits": []},
    }
    with pytest.raises(StoreUnavailable, match=r"1 of 3 shards did not answer.*node left"):
        complete(failed)
    # a lost primary without a replica: neither failed nor successful (seen on a real cluster)
    unassigned = {"_shards": {"total": 3, "successful": 2, "skipped": 0, "failed": 0}, "hits": {"hits": []}}
    with pytest.raises(StoreUnavailable, match="1 of 3 shards did not answer"):
        complete(unassigned)
    _, missing = complete(unassigned, allow_partial=True)
    assert missing is not None and (missing.shards_total, missing.shards_answered) == (3, 2)
    with pytest.raises(StoreUnavailable, match="timed out"):
        complete({**ok, "timed_out": True})
    with pytest.raises(StoreUnavailable, match="sub-search failed"):
        complete({"error": {"type": "search_phase_execution_exception"}}, allow_partial=True)


def test_node_lift_leaves_a_memory_that_does_not_match_where_it_is() -> None:
    # candidate 0 is a strong match; 1 shares its node but does not match the query at all
    # (below the relevance floor); 2 is a real, weaker answer in another node
    rel = [0.9, 0.05, 0.4]
    nodes = ["notes", "notes", "travel"]
    lifted = node_lifted(rel, nodes, 1.0, liftable=[True, False, True])
    assert lifted == pytest.approx([0.9, 0.05, 0.4])
    assert node_lifted(rel, nodes, 1.0)[1] > rel[2]  # without the gate the neighbour jumps above


def test_e5_small_v2_ranks_a_detected_target_without_the_target_z_terms() -> None:
    """e5-small-v2's ranking (issue 68): a detected target moves neither the semantic weight nor
    a Z penalty; a target the caller chose still penalises distance on the axis."""
    from brain_search.retrieval.score.ranking import ranking_for

    e5v2, minilm = ranking_for("e5-small-v2", 1.0), ranking_for("all-MiniLM-L6-v2", 1.0)
    assert (e5v2.sem_weight_slope, e5v2.z_penalty, e5v2.outside_factor) == (0.0, 0.0, 1.0)
    assert e5v2.semantic_weight(0.1) == e5v2.semantic_weight(0.9) == e5v2.sem_weight_mid
    assert minilm.semantic_weight(0.9) > minilm.semantic_weight(0.1)
    args = {
        "lexical": [0.9, 0.3],
        "semantic": [0.4, 0.9],
        "bm25": [8.0, 2.0],
        "cosine": [0.80, 0.86],
        "tolerance": 0.15,
        "z_positions": [0.1, 0.8],
    }
    detected = [z_relevance(**args, target_z=t, params=e5v2) for t in (0.1, 0.9)]  # type: ignore[arg-type]
    assert detected[0] == detected[1]  # the detected target ranks nothing by Z
    explicit = [z_relevance(**args, target_z=t, params=e5v2.for_explicit_z()) for t in (0.1, 0.9)]  # type: ignore[arg-type]
    assert explicit[0][0] > explicit[1][0] and explicit[1][1] > explicit[0][1]
