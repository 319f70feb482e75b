"""Lexical weights from the tenant's own statistics (pure)."""

from __future__ import annotations

import math

from brain_search.retrieval.queries import PHRASE_BOOST
from brain_search.retrieval.tenant_stats import idf, weighted_clause, words_to_weigh


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
