"""Lexical weights from the tenant's own statistics (pure)."""

from __future__ import annotations

import math

from brain_search.retrieval.queries import PHRASE_BOOST
from brain_search.retrieval.tenant_stats import (
    counts_body,
    idf,
    lexical_score,
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
