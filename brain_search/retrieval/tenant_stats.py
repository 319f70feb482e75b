"""Lexical scores from the tenant's own statistics (``BRAIN_LEXICAL_STATS=tenant``).

BM25's idf and length norm come from the whole index, so one tenant's memories move another's
lexical scores and even its order (tenant A adding 500 memories with "zzqx" lowered tenant B's
lexical score of "zzqx a" from 0.55 to 0.45). In this mode the lexical clause reads no index
statistics: each query term is a ``constant_score`` clause whose boost is the term's BM25 idf
computed over *the tenant's* memories (its document count and the term's document frequency, one
``_msearch`` of counts before the search), and a quoted phrase counts ``PHRASE_BOOST`` times the
idf of its words. A memory's lexical score is then the sum of the idfs of the query terms it
holds: what it says and what its own tenant holds, nothing else. What it gives up is BM25's term
frequency and length norm (measured in lab/README.md, "Tenant-independent scores").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import orjson
from opensearchpy import OpenSearch

from brain_search.retrieval import queries
from brain_search.retrieval.ranking import query_terms


def idf(docs: int, df: int) -> float:
    """BM25's idf (Lucene's form, never negative) over ``docs`` documents (pure)."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


def words_to_weigh(terms: Sequence[str], phrases: Sequence[str]) -> list[str]:
    """The query terms and the words of its phrases, once each (pure)."""
    out = list(terms)
    for p in phrases:
        out += query_terms(p)
    return list(dict.fromkeys(out))


def term_weights(
    client: OpenSearch, alias: str, tenant_id: str, terms: Sequence[str], phrases: Sequence[str]
) -> dict[str, float]:
    """word → its idf over the tenant's memories (one ``_msearch`` of counts, routed)."""
    words = words_to_weigh(terms, phrases)
    if not words:
        return {}
    tenant = {"term": {"tenant_id": tenant_id}}
    bodies = [{"size": 0, "track_total_hits": True, "query": {"bool": {"filter": [tenant]}}}]
    for w in words:
        match = {"match": {queries.LEXICAL_FIELD: {"query": w, "operator": "and"}}}
        bodies.append({"size": 0, "track_total_hits": True, "query": {"bool": {"filter": [tenant, match]}}})
    header = orjson.dumps({"routing": tenant_id})
    payload = b"".join(header + b"\n" + orjson.dumps(b) + b"\n" for b in bodies).decode()
    answers = client.msearch(body=payload, index=alias)["responses"]
    counts = [int(a["hits"]["total"]["value"]) if "hits" in a else 0 for a in answers]
    docs = counts[0]
    return {w: idf(docs, df) for w, df in zip(words, counts[1:], strict=True)}


def weighted_clause(terms: Sequence[str], phrases: Sequence[str], weights: dict[str, float]) -> dict[str, Any]:
    """The lexical clause in this mode: a constant score per term and phrase (pure)."""
    should: list[dict[str, Any]] = [
        {
            "constant_score": {
                "filter": {"match": {queries.LEXICAL_FIELD: {"query": t, "operator": "and"}}},
                "boost": max(weights.get(t, 0.0), 1e-6),
            }
        }
        for t in terms
    ]
    for p in phrases:
        boost = queries.PHRASE_BOOST * max(sum(weights.get(w, 0.0) for w in query_terms(p)), 1e-6)
        should.append(
            {"constant_score": {"filter": {"match_phrase": {queries.PHRASE_FIELD: {"query": p}}}, "boost": boost}}
        )
    if not should:
        return {"match_none": {}}
    return {"bool": {"should": should, "minimum_should_match": 1}}
