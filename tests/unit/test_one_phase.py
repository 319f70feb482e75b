"""The one-phase candidates' search (queries.one_phase_search, pipeline.one_phase_candidates): the
same candidates as a BM25 and a kNN sub-search, read from one query's hits."""

from __future__ import annotations

from typing import Any

from brain_search.retrieval import queries
from brain_search.retrieval.candidates import one_phase_candidates
from brain_search.retrieval.tenant_stats import TenantStats, tenant_clause


def _hit(doc: str, score: float, cosine: float, names: list[str]) -> dict[str, Any]:
    return {
        "_id": doc,
        "_score": score,
        "_source": {"memory_id": doc, "content": doc},
        "fields": {queries.COSINE_FIELD: [cosine]},
        "matched_queries": names,
    }


def test_knn_lift_is_a_power_of_two_above_the_bound() -> None:
    assert queries.knn_lift(0.0) == 1.0
    assert queries.knn_lift(1.0) == 2.0
    assert queries.knn_lift(37.5) == 64.0
    assert queries.knn_lift(64.0) == 128.0


def test_score_bound_sums_each_terms_saturated_score_and_the_phrases() -> None:
    clause = queries.tenant_bm25_clause(["alpha", "beta"], [2.0, 0.5], ["alpha beta"], [3.0], 12.0)
    assert queries.score_bound(clause) == 2.0 * (queries.BM25_K1 + 1) + 0.5 * (queries.BM25_K1 + 1) + 3.0


def test_one_phase_search_lifts_the_knn_top_k_above_any_lexical_score() -> None:
    stats = TenantStats(docs=100, length_sum=1000.0, length_docs=100, df={"alpha": 3, "beta": 50})
    lexical = tenant_clause(["alpha", "beta"], [], stats)
    lift = queries.knn_lift(queries.score_bound(lexical))
    filters = queries.scope_filter("t1")
    body = queries.one_phase_search([0.1, 0.2], 40, 80, filters, lexical, lift, 100)
    assert body["size"] == 80
    should = body["query"]["bool"]["should"]
    assert should[0]["constant_score"]["_name"] == queries.KNN_NAME
    assert should[0]["constant_score"]["boost"] == lift > queries.score_bound(lexical)
    assert should[0]["constant_score"]["filter"] == queries.knn_query([0.1, 0.2], 40, filters, 100)
    assert should[1] == lexical
    assert body["query"]["bool"]["filter"] == filters
    assert body["query"]["bool"]["minimum_should_match"] == 1


def test_candidates_are_the_bm25_top_k_and_the_knn_top_k() -> None:
    lift = 64.0
    hits = [  # the engine's order: kNN hits (lift + BM25) first, then BM25 alone
        _hit("k1", lift + 5.0, 0.9, ["knn", "t0"]),
        _hit("k2", lift, 0.8, ["knn"]),
        _hit("l1", 9.0, 0.2, ["t0", "t1"]),
        _hit("l2", 4.0, 0.1, ["t1"]),
        _hit("l3", 1.0, 0.3, ["t1"]),
    ]
    cands = one_phase_candidates(hits, k=2, lift=lift)
    assert list(cands) == ["l1", "k1", "k2"]  # BM25 top 2 (9.0, 5.0), then the kNN hit not among them
    assert cands["l1"].bm25 == 9.0 and cands["l1"].lexical_hit and not cands["l1"].semantic_hit
    assert cands["k1"].bm25 == 5.0 and cands["k1"].lexical_hit and cands["k1"].semantic_hit
    assert cands["k1"].matched == {"t0"}  # the kNN clause's name is not a query term
    assert cands["k2"].bm25 == 0.0 and cands["k2"].semantic_hit and not cands["k2"].lexical_hit
    assert cands["k2"].cosine == 0.8


def test_several_shards_keep_the_k_most_similar_knn_hits() -> None:
    lift = 8.0
    hits = [_hit(f"k{i}", lift, c, ["knn"]) for i, c in enumerate([0.5, 0.9, 0.7, 0.6])]
    cands = one_phase_candidates(hits, k=2, lift=lift)
    assert list(cands) == ["k1", "k2"]
