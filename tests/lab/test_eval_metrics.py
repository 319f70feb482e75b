"""The IR metrics against hand computations."""

import math

import pytest
from brain_lab.eval.metrics import mean, ndcg_at_k, recall_at_k, reciprocal_rank, score_query


def test_recall_at_k_counts_relevant_in_top_k() -> None:
    ranked = ["a", "x", "b", "y", "c"]
    rel = {"a": 1, "b": 1, "c": 1, "d": 1}
    assert recall_at_k(ranked, rel, 1) == 0.25
    assert recall_at_k(ranked, rel, 3) == 0.5
    assert recall_at_k(ranked, rel, 5) == 0.75
    assert recall_at_k(ranked, {}, 5) == 0.0


def test_recall_ignores_duplicates_in_the_ranking() -> None:
    assert recall_at_k(["a", "a", "a"], {"a": 1, "b": 1}, 3) == 0.5


def test_ndcg_binary_by_hand() -> None:
    # relevant at ranks 2 and 4 of 2 relevant: DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3)
    got = ndcg_at_k(["x", "a", "y", "b"], {"a": 1, "b": 1}, 10)
    want = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert got == pytest.approx(want)
    assert got == pytest.approx(0.6509209, abs=1e-6)


def test_ndcg_graded_and_cut() -> None:
    # grades 2 and 1; ranking puts the grade-1 doc first: DCG = 1 + 2/log2(3), IDCG = 2 + 1/log2(3)
    got = ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10)
    assert got == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    # at k=1 only "b" counts: DCG 1, IDCG 2
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 1) == pytest.approx(0.5)
    assert ndcg_at_k(["a", "b"], {"a": 2, "b": 1}, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x"], {"a": 1}, 10) == 0.0


def test_reciprocal_rank() -> None:
    assert reciprocal_rank(["x", "y", "a"], {"a": 1}) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x", "y", "a"], {"a": 1}, k=2) == 0.0
    assert reciprocal_rank(["a"], {"a": 1}) == 1.0
    assert reciprocal_rank([], {"a": 1}) == 0.0


def test_score_query_and_mean() -> None:
    row = score_query(["a", "x"], {"a": 1, "b": 1}, ["R@5", "MRR@10", "nDCG@10"])
    assert row["R@5"] == 0.5 and row["MRR@10"] == 1.0
    assert row["nDCG@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert mean([1.0, 0.0, 0.5]) == 0.5 and mean([]) == 0.0
