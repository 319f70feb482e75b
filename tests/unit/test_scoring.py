import pytest

from brain_search.scoring import (
    RankingParams,
    contains_phrase,
    embedding_similarity,
    lexical_precision,
    query_terms,
    spec_z_relevance,
    tier_of,
    z_position,
    z_relevance,
)


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
    assert contains_phrase("The equity split is 53% for me", "53%  FOR me")
    assert contains_phrase("He said: 'ship it, now!'", "ship it now")
    assert not contains_phrase("shipit now", "ship it")
    assert not contains_phrase("equity", "")


def test_query_terms_drop_stopwords() -> None:
    assert query_terms("what did we discuss about the CTO offer") == ["discuss", "cto", "offer"]
    assert query_terms("what is it") == ["what", "is", "it"]


def test_similarity_and_z() -> None:
    assert embedding_similarity(-0.2) == 0.0 and embedding_similarity(1.3) == 1.0
    assert z_position(0.0, 0.0) == 0.5
    assert z_position(1.0, 0.0) == 0.0 and z_position(0.0, 0.7) == 1.0
    assert z_position(0.85, 0.72) == pytest.approx(0.72 / 1.57)


def test_spec_relevance_literal() -> None:
    assert spec_z_relevance(1.0, 0.0, 0.0, 0.0, 0.2) == 1.0
    assert spec_z_relevance(1.0, 0.0, 0.0, 0.5, 0.2) == pytest.approx(0.25)  # outside tolerance: halved


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
    exact = z_relevance(lex, sem, bm25, cos, 0.1, 0.15, RankingParams())
    broad = z_relevance(lex, sem, bm25, cos, 0.9, 0.15, RankingParams())
    assert exact[0] > exact[1] and broad[1] > broad[0]
    spec = z_relevance(lex, sem, bm25, cos, 0.1, 0.15, RankingParams(mode="spec"))
    assert spec[0] > spec[1]
