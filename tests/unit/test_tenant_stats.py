"""Lexical weights from the tenant's own statistics (pure)."""

from __future__ import annotations

import math

from brain_search.retrieval.queries import PHRASE_BOOST
from brain_search.retrieval.tenant_stats import (
    UNCOUNTED_WEIGHT,
    WeightCache,
    clause_boosts,
    counts_body,
    idf,
    lexical_score,
    score_of,
    term_weights,
    weighted_clause,
    weights_from,
    words_to_weigh,
)


def test_idf_is_bm25s_and_never_negative() -> None:
    assert idf(10, 1) > idf(10, 5) > idf(10, 10) > 0
    assert math.isclose(idf(2, 1), math.log(1 + 1.5 / 1.5))


def test_the_clause_reads_no_index_statistics() -> None:
    clause = weighted_clause(["zzqx", "yyqw"], ["yyqw a"], {"zzqx": 0.5, "yyqw": 2.0, "a": 0.1})
    should = clause["bool"]["should"]
    # a phrase counts its topic words ("a" is a stopword)
    assert [c["constant_score"]["boost"] for c in should] == [0.5, 2.0, PHRASE_BOOST * 2.0]
    assert all("constant_score" in c for c in should)  # no BM25 scoring clause anywhere
    assert weighted_clause([], [], {}) == {"match_none": {}}
    assert words_to_weigh(["zzqx"], ["zzqx and budget"]) == ["zzqx", "budget"]


def test_one_search_counts_the_tenant_and_every_word() -> None:
    body = counts_body("t1", ["zzqx", "budget"])
    assert body["size"] == 0 and body["track_total_hits"] is True
    assert body["query"]["bool"]["filter"] == [{"term": {"tenant_id": "t1"}}]
    assert sorted(body["aggs"]["df"]["filters"]["filters"]) == ["0", "1"]
    answer = {
        "hits": {"total": {"value": 10, "relation": "eq"}},
        "aggregations": {"df": {"buckets": {"0": {"doc_count": 1}, "1": {"doc_count": 10}}}},
    }
    assert weights_from(answer, ["zzqx", "budget"]) == {"zzqx": idf(10, 1), "budget": idf(10, 10)}


def test_the_lexical_score_is_the_clause_boosts_it_matched() -> None:
    weights = {"zzqx": 0.5, "yyqw": 2.0, "a": 0.1}
    terms, phrases = ["zzqx", "yyqw"], ["yyqw a"]
    boosts = [c["constant_score"]["boost"] for c in weighted_clause(terms, phrases, weights)["bool"]["should"]]
    assert lexical_score({"t0", "t1", "p0"}, terms, phrases, weights) == sum(boosts)
    assert lexical_score(["t1"], terms, phrases, weights) == 2.0
    assert lexical_score(["p0"], terms, phrases, weights) == PHRASE_BOOST * 2.0
    assert lexical_score([], terms, phrases, weights) == 0.0
    assert lexical_score(["t0"], ["unseen"], [], {}) == 1e-6  # the clause's floor, as the engine scores it


def test_boosts_read_once_per_recall_score_every_hit_alike() -> None:
    weights = {"zzqx": 0.5, "yyqw": 2.0, "a": 0.1}
    terms, phrases = ["zzqx", "yyqw"], ["yyqw a", "zzqx a"]
    boosts = clause_boosts(terms, phrases, weights)
    assert [name for name, _ in boosts] == ["t0", "t1", "p0", "p1"]  # the clauses' names, in the query's order
    should = weighted_clause(terms, phrases, weights)["bool"]["should"]
    assert [b for _, b in boosts] == [c["constant_score"]["boost"] for c in should]
    for matched in ({"t0"}, {"t1", "p1"}, {"t0", "t1", "p0", "p1"}, set(), {"x9"}):
        assert score_of(matched, boosts) == lexical_score(matched, terms, phrases, weights)


class _Answers:
    def __init__(self, answer: dict) -> None:
        self.answer = answer
        self.bodies: list[str] = []

    def msearch(self, body: str, index: str) -> dict:
        self.bodies.append(body)
        return {"responses": [self.answer]}


def test_a_tenant_shard_that_does_not_answer_weighs_every_word_the_same() -> None:
    lost = _Answers({"error": {"type": "search_phase_execution_exception"}, "status": 503})
    got = term_weights(lost, "a", "t1", ["zzqx", "budget"], [])  # type: ignore[arg-type]
    assert got == {"zzqx": UNCOUNTED_WEIGHT, "budget": UNCOUNTED_WEIGHT}
    assert len(lost.bodies) == 1 and lost.bodies[0].startswith('{"routing":"t1"}')
    counted = {"df": {"buckets": {"0": {"doc_count": 1}}}}
    fine = _Answers({"hits": {"total": {"value": 4, "relation": "eq"}}, "aggregations": counted})
    assert term_weights(fine, "a", "t1", ["zzqx"], []) == {"zzqx": idf(4, 1)}  # type: ignore[arg-type]


def test_the_weight_cache_takes_what_was_counted_and_guesses_the_rest() -> None:
    cache = WeightCache()
    assert cache.provisional("t1", ["zzqx"]) is None  # a tenant never counted: count first
    counted = {"df": {"buckets": {"0": {"doc_count": 1}, "1": {"doc_count": 3}}}}
    fine = _Answers({"hits": {"total": {"value": 4, "relation": "eq"}}, "aggregations": counted})
    weights = term_weights(fine, "a", "t1", ["zzqx", "budget"], [], cache)  # type: ignore[arg-type]
    assert cache.provisional("t1", ["zzqx", "budget"]) == (weights, False)
    # a word never counted for t1 weighs what a word in none of its 4 memories would: the most
    assert cache.provisional("t1", ["zzqx", "unseen"]) == ({"zzqx": weights["zzqx"], "unseen": idf(4, 0)}, True)
    assert idf(4, 0) > max(weights.values())
    assert cache.provisional("t2", ["zzqx"]) is None  # per tenant
    lost = _Answers({"error": {"type": "search_phase_execution_exception"}, "status": 503})
    term_weights(lost, "a", "t3", ["zzqx"], [], cache)  # type: ignore[arg-type]
    assert cache.provisional("t3", ["zzqx"]) is None  # an uncounted weight is never kept


def test_the_weight_cache_is_bounded() -> None:
    small = WeightCache(max_entries=2)  # the least recently used goes first
    small.put("t1", 10, {"a": 1.0, "b": 2.0})
    assert small.provisional("t1", ["a"]) == ({"a": 1.0}, False)
    small.put("t1", 10, {"c": 3.0})
    assert small.provisional("t1", ["b"]) == ({"b": idf(10, 0)}, True)
    assert small.provisional("t1", ["a", "c"]) == ({"a": 1.0, "c": 3.0}, False)
