"""Lexical scores from the tenant's own statistics (``BRAIN_LEXICAL_STATS=tenant``).

BM25's idf and length norm come from the whole index, so one tenant's memories move another's
lexical scores and even its order (tenant A adding 500 memories with "zzqx" lowered tenant B's
lexical score of "zzqx a" from 0.55 to 0.45). In this mode the lexical clause reads no index
statistics: each query term is a ``constant_score`` clause whose boost is the term's BM25 idf
computed over *the tenant's* memories (its document count and the term's document frequency, one
search of counts before the search), and a quoted phrase counts ``PHRASE_BOOST`` times the
idf of its words. A memory's lexical score is then the sum of the idfs of the query terms it
holds: what it says and what its own tenant holds, nothing else. What it gives up is BM25's term
frequency and length norm (measured in lab/README.md, "Tenant-independent scores").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from opensearchpy import OpenSearch

from brain_search.retrieval import queries
from brain_search.retrieval.ranking import query_terms

UNCOUNTED_WEIGHT = 1.0
"""A word's weight when the tenant's counts could not be read (its shard did not answer)."""


def idf(docs: int, df: int) -> float:
    """BM25's idf (Lucene's form, never negative) over ``docs`` documents (pure)."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


def words_to_weigh(terms: Sequence[str], phrases: Sequence[str]) -> list[str]:
    """The query terms and the words of its phrases, once each (pure)."""
    out = list(terms)
    for p in phrases:
        out += query_terms(p)
    return list(dict.fromkeys(out))


def counts_body(tenant_id: str, words: Sequence[str]) -> dict[str, Any]:
    """One search for the tenant's document count (its total hits) and each word's document
    frequency (a bucket of one ``filters`` aggregation, keyed by the word's position) (pure)."""
    match = {str(i): queries.term_match(w) for i, w in enumerate(words)}
    return {
        "size": 0,
        "track_total_hits": True,
        "query": {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}]}},
        "aggs": {"df": {"filters": {"filters": match}}},
    }


def weights_from(answer: dict[str, Any], words: Sequence[str]) -> dict[str, float]:
    """word → idf from ``counts_body``'s answer (pure)."""
    docs = int(answer["hits"]["total"]["value"])
    buckets = answer["aggregations"]["df"]["buckets"]
    return {w: idf(docs, int(buckets[str(i)]["doc_count"])) for i, w in enumerate(words)}


def term_weights(
    client: OpenSearch, alias: str, tenant_id: str, terms: Sequence[str], phrases: Sequence[str]
) -> dict[str, float]:
    """word → its idf over the tenant's memories: one routed search of counts (one sub-search
    per word cost the engine a search context each), sent as an ``_msearch`` of one so that a
    shard that does not answer is an error in the answer, not an HTTP 503 the client retries.

    When the tenant's shard does not answer, every word weighs ``UNCOUNTED_WEIGHT``: the
    recall's own search meets the same shard and is a 503 naming it, or, with ``allow_partial``,
    what the other shards hold, marked partial."""
    words = words_to_weigh(terms, phrases)
    if not words:
        return {}
    header = orjson.dumps({"routing": tenant_id})
    payload = (header + b"\n" + orjson.dumps(counts_body(tenant_id, words)) + b"\n").decode()
    answer = client.msearch(body=payload, index=alias)["responses"][0]
    if "error" in answer:
        return dict.fromkeys(words, UNCOUNTED_WEIGHT)
    return weights_from(answer, words)


def term_boost(term: str, weights: dict[str, float]) -> float:
    return max(weights.get(term, 0.0), 1e-6)


def phrase_boost(phrase: str, weights: dict[str, float]) -> float:
    return queries.PHRASE_BOOST * max(sum(weights.get(w, 0.0) for w in query_terms(phrase)), 1e-6)


def weighted_clause(terms: Sequence[str], phrases: Sequence[str], weights: dict[str, float]) -> dict[str, Any]:
    """The lexical clause in this mode: a constant score per term and phrase (pure)."""
    should = [{"constant_score": {"filter": queries.term_match(t), "boost": term_boost(t, weights)}} for t in terms]
    should += [
        {"constant_score": {"filter": queries.phrase_match(p), "boost": phrase_boost(p, weights)}} for p in phrases
    ]
    if not should:
        return {"match_none": {}}
    return {"bool": {"should": should, "minimum_should_match": 1}}


def lexical_score(
    matched: Iterable[str], terms: Sequence[str], phrases: Sequence[str], weights: dict[str, float]
) -> float:
    """What ``weighted_clause`` scores a memory, from the names of the clauses it matched
    (``queries.coverage_filter``'s ``matched_queries``), summed in float64 in the query's order
    (pure). The engine sums float32 boosts in the order of its clauses' costs, which other
    tenants' postings set, so its last bit could move with them; this sum cannot."""
    names = set(matched)
    score = sum(term_boost(t, weights) for i, t in enumerate(terms) if queries.term_name(i) in names)
    return score + sum(phrase_boost(p, weights) for i, p in enumerate(phrases) if queries.phrase_name(i) in names)
