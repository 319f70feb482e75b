"""Small, tested builders for OpenSearch query bodies (no copy-pasted dicts elsewhere)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from brain_search_client.models.memory import SHOWN_FIELDS

from brain_search.store.documents import VIEW_FIELD
from brain_search.store.scope import TenantScope


def still_valid() -> dict[str, Any]:
    """Memories without a ``valid_until``, or whose ``valid_until`` is still ahead."""
    no_end = {"bool": {"must_not": [{"exists": {"field": "valid_until"}}]}}
    return {"bool": {"should": [no_end, {"range": {"valid_until": {"gt": "now"}}}], "minimum_should_match": 1}}


def superseding(scope: TenantScope, memory_ids: Sequence[str]) -> dict[str, Any]:
    """The tenant's memories (its user's: another user's memory never hides one of yours) that
    supersede any of ``memory_ids``."""
    filters = [*scope.filters(), {"terms": {"supersedes": list(memory_ids)}}]
    return {"query": {"bool": {"filter": filters}}, "size": 1000, **SUPERSEDER_FETCH}


SUPERSEDER_FETCH: dict[str, Any] = {"_source": False, "docvalue_fields": ["memory_id", "supersedes"]}
"""a superseding memory's id and what it supersedes, from doc values (no ``_source`` parse)"""

SUPERSEDERS_SHOWN = 200
"""How many of the tenant's superseding memories ride along in a recall's own ``_msearch``."""


def superseders(scope: TenantScope, size: int) -> dict[str, Any]:
    """Every memory of the tenant (of its user) that supersedes another, up to ``size`` (the
    total is counted to ``size + 1``, so the caller knows whether it has them all)."""
    filters = [*scope.filters(), {"exists": {"field": "supersedes"}}]
    return {
        "query": {"bool": {"filter": filters}},
        "size": size,
        "track_total_hits": size + 1,
        **SUPERSEDER_FETCH,
    }


def knn_query(
    vector: Sequence[float], k: int, filters: list[dict[str, Any]], ef_search: int | None = None
) -> dict[str, Any]:
    """An efficient-filtered kNN clause (filter applied inside the HNSW search)."""
    body: dict[str, Any] = {
        "vector": [float(x) for x in vector],
        "k": k,
        "filter": {"bool": {"filter": filters}},
    }
    if ef_search:
        body["method_parameters"] = {"ef_search": max(ef_search, k)}
    return {"knn": {"embedding": body}}


LEXICAL_FIELD = "content.en"
PHRASE_FIELD = "content"
PHRASE_BOOST = 3.0
TF_FIELD = "content.tf"
"""English tokens under the ``brain_tf`` similarity: a term's score is its frequency in the memory"""
LENGTH_FIELD = "content.len"
"""a memory's length in English tokens (``token_count``)"""
BM25_K1 = 1.2
BM25_B = 0.75
"""BM25's saturation and length norm (Lucene's defaults, also the engine's own BM25's)"""
BM25_B_SHORT = 0.2
"""the length norm for a tenant of short memories (chat lines)"""
SHORT_AVGDL = 30.0
LONG_AVGDL = 60.0
"""a tenant's average length in English tokens: at or below ``SHORT_AVGDL`` b is
``BM25_B_SHORT``, at or above ``LONG_AVGDL`` ``BM25_B``, linear between"""


def bm25_b(avgdl: float) -> float:
    """BM25's b for a tenant whose memories average ``avgdl`` English tokens (pure).

    Length normalisation assumes a long text is a verbose one. For short chat lines the opposite
    holds: a longer line says more (names, places, what happened), and normalising it away buries
    the answer under two-word replies, as for tweets in TREC's microblog track. Fitted on the dev
    splits (lab/reports/history/lab-2026-12.md, "BM25's b by the tenant's average length"): LoCoMo's lines (17–22
    tokens on average) gain from b 0.2; RealMem's turns (77–128) and SciFact's abstracts (162)
    do not, and RealMem loses on test. Both bounds sit in the gap between them.
    """
    if avgdl <= SHORT_AVGDL:
        return BM25_B_SHORT
    if avgdl >= LONG_AVGDL:
        return BM25_B
    return BM25_B_SHORT + (BM25_B - BM25_B_SHORT) * (avgdl - SHORT_AVGDL) / (LONG_AVGDL - SHORT_AVGDL)


BM25_SCRIPT = (
    "double tf = _score; double n = 1.0;"
    " if (params.avgdl > 0 && doc['content.len'].size() > 0) {"
    " n = 1.0 - params.b + params.b * doc['content.len'].value / params.avgdl; }"
    " return params.idf * tf * (params.k1 + 1.0) / (tf + params.k1 * n);"
)
"""The tenant's BM25 of one term from its frequency (``_score`` over ``TF_FIELD``), the memory's
length and the tenant's idf and average length; a memory without a length is taken as average."""


def term_name(i: int) -> str:
    return f"t{i}"


def phrase_name(i: int) -> str:
    return f"p{i}"


def term_match(term: str, name: str | None = None) -> dict[str, Any]:
    """A document holds the query term (all its tokens, index analyzer). The one clause that
    coverage, the tenant's counts and the tenant-statistics scores all use, so they agree."""
    clause: dict[str, Any] = {"query": term, "operator": "and"}
    if name:
        clause["_name"] = name
    return {"match": {LEXICAL_FIELD: clause}}


def phrase_match(phrase: str, name: str | None = None) -> dict[str, Any]:
    """A document holds the quoted phrase (``term_match``'s twin for phrases)."""
    clause: dict[str, Any] = {"query": phrase}
    if name:
        clause["_name"] = name
    return {"match_phrase": {PHRASE_FIELD: clause}}


def tenant_bm25_clause(
    terms: Sequence[str],
    term_idf: Sequence[float],
    phrases: Sequence[str],
    phrase_weights: Sequence[float],
    *,
    avgdl: float,
) -> dict[str, Any]:
    """BM25 with the tenant's statistics: one ``script_score`` per term over its frequency
    (``tenant_stats``), one constant score per quoted phrase, each named (``term_name``,
    ``phrase_name``) so ``matched_queries`` says which a memory holds."""
    should: list[dict[str, Any]] = []
    b = bm25_b(avgdl)
    for i, (t, w) in enumerate(zip(terms, term_idf, strict=True)):
        params = {"idf": w, "avgdl": avgdl, "k1": BM25_K1, "b": b}
        inner = {"match": {TF_FIELD: {"query": t, "operator": "and"}}}
        script = {"source": BM25_SCRIPT, "params": params}
        should.append({"script_score": {"query": inner, "script": script, "_name": term_name(i)}})
    for i, (p, w) in enumerate(zip(phrases, phrase_weights, strict=True)):
        should.append({"constant_score": {"filter": phrase_match(p), "boost": w, "_name": phrase_name(i)}})
    if not should:
        return {"match_none": {}}
    return {"bool": {"should": should, "minimum_should_match": 1}}


def coverage_filter(terms: Sequence[str], phrases: Sequence[str]) -> dict[str, Any]:
    """A filter that matches every document but names each query term / phrase clause, so the
    engine reports (``matched_queries``) which ones a hit contains, with the index analyzer."""
    should = [term_match(t, term_name(i)) for i, t in enumerate(terms)]
    should += [phrase_match(p, phrase_name(i)) for i, p in enumerate(phrases)]
    return {"bool": {"must": [{"match_all": {}}], "should": should}}


def lexical_clause(lexical_query: str, phrases: Sequence[str]) -> dict[str, Any]:
    """BM25 over the English field, with quoted phrases as boosted phrase clauses."""
    should: list[dict[str, Any]] = []
    if lexical_query.strip():
        should.append({"match": {LEXICAL_FIELD: {"query": lexical_query}}})
    should += [{"match_phrase": {PHRASE_FIELD: {"query": p, "boost": PHRASE_BOOST}}} for p in phrases]
    return {"bool": {"should": should, "minimum_should_match": 1}}


RESULT_FIELDS = list(SHOWN_FIELDS)


NODE_PATH_VALUES = "node_path.raw"


MEMORY_ID_VALUES = "memory_id"


def result_fetch() -> dict[str, Any]:
    """What a recall's hits bring back: doc values only (the view, ``documents.VIEW_FIELD``, the
    memory id and the node path), no stored field at all, not even ``_id``: reading one makes the
    engine decompress the hit's stored record with ``_source`` and its 384-float vector, which
    was most of the fetch phase (lab/reports/performance.md). A hit's ``_id`` is its tenant and
    memory id's (``documents.memory_doc_id``). A memory stored before views has none: the
    pipeline reads its ``RESULT_FIELDS`` from ``_source`` instead (``views.fill_sources``)."""
    return {
        "_source": False,
        "stored_fields": "_none_",
        "docvalue_fields": [VIEW_FIELD, MEMORY_ID_VALUES, NODE_PATH_VALUES],
    }


COSINE_FIELD = "cosine"


def cosine_script_field(vector: Sequence[float]) -> dict[str, Any]:
    """A script field with each hit's cosine (−1…1) to the query vector, computed in the engine
    by the k-NN plugin's Painless ``cosineSimilarity`` over the stored vector.

    Why not the vector in ``_source``: reading it back costs the engine far more than this
    (measured on 10k memories: the BM25 sub-search took 18–27 ms with it, 1–2 ms without), and
    384 floats per hit cross the wire and the JSON parser for nothing.
    """
    return {
        COSINE_FIELD: {
            "script": {
                "source": "cosineSimilarity(params.q, doc['embedding'])",
                "params": {"q": [float(x) for x in vector]},
            }
        }
    }


def lexical_search(
    lexical_query: str,
    phrases: Sequence[str],
    terms: Sequence[str],
    filters: list[dict[str, Any]],
    *,
    size: int,
    vector: Sequence[float],
    lexical: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The BM25 sub-search. Hits carry their cosine to ``vector`` (script field ``cosine``), so
    their semantic score needs no round trip. ``lexical``: the lexical clause to use instead of
    the engine's BM25 (``tenant_stats.tenant_clause``, whose clauses are named themselves: no
    coverage filter then)."""
    coverage = [] if lexical is not None else [coverage_filter(terms, phrases)]
    return {
        "size": size,
        **result_fetch(),
        "script_fields": cosine_script_field(vector),
        "query": {
            "bool": {
                "must": [lexical or lexical_clause(lexical_query, phrases)],
                "filter": [*filters, *coverage],
            }
        },
    }


def knn_search(
    vector: Sequence[float],
    k: int,
    terms: Sequence[str],
    phrases: Sequence[str],
    *,
    filters: list[dict[str, Any]],
    ef_search: int | None = None,
    lexical_query: str = "",
    size: int | None = None,
    lexical: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The kNN sub-search, carrying both scores of every hit in the same round trip.

    The HNSW top-``k`` (efficient filtering inside HNSW) is a *filter* clause, so it picks the
    hits but does not score them; the lexical clause (the BM25 sub-search's own) is a ``should``,
    so each hit's ``_score`` is exactly its BM25 (0 when no query term matches) — the value an
    ids-restricted BM25 search of that document would return. Its cosine comes in the ``cosine``
    script field. Hits are ordered by BM25, not similarity: ``size`` (default ``k``) must cover
    every shard's top-``k`` (``k`` × shards searched) and the caller cuts by cosine.

    ``lexical`` (tenant statistics) names its own clauses, so no coverage filter rides along.
    """
    knn = knn_query(vector, k, filters, ef_search)
    if lexical is not None:
        bool_query: dict[str, Any] = {"filter": [knn], "should": [lexical]}
    else:
        bool_query = {"filter": [knn, coverage_filter(terms, phrases)]}
        if lexical_query.strip() or phrases:
            bool_query["should"] = [lexical_clause(lexical_query, phrases)]
    return {
        "size": size or k,
        **result_fetch(),
        "script_fields": cosine_script_field(vector),
        "query": {"bool": bool_query},
    }


def conversation_turns(
    filters: list[dict[str, Any]],
    conversation_id: str,
    node_id: str | None,
    around: str | None,
    *,
    size: int,
    hidden: Sequence[str] = (),
) -> dict[str, Any]:
    """The turns of one conversation (``conversation_id`` within ``node_id``; no node: the turns
    without one) under the recall's own ``filters``: the ``size`` nearest in time to ``around``
    (the best hit's timestamp; ties by memory id), with the count of all of them. ``hidden``:
    memory ids left out (superseded ones)."""
    clauses: list[dict[str, Any]] = [*filters, {"term": {"conversation_id": conversation_id}}]
    if node_id:
        clauses.append({"term": {"node_id": node_id}})
    else:
        clauses.append({"bool": {"must_not": [{"exists": {"field": "node_id"}}]}})
    if hidden:
        clauses.append({"bool": {"must_not": [{"terms": {"memory_id": list(hidden)}}]}})
    query: dict[str, Any] = {"filter": clauses}
    if around:
        query["should"] = [{"distance_feature": {"field": "timestamp", "origin": around, "pivot": "1h"}}]
    return {
        "size": size,
        **result_fetch(),  # the turns' views, as a recall's hits (``views.fill_sources``)
        "track_total_hits": True,
        "sort": [{"_score": "desc"}, {"memory_id": "asc"}],
        "query": {"bool": query},
    }


def counts_body(scope: TenantScope, words: Sequence[str]) -> dict[str, Any]:
    """One search for the tenant's memory count (its total hits), each word's document frequency
    (a bucket of one ``filters`` aggregation, keyed by the word's position) and the sum of its
    memories' lengths (``LENGTH_FIELD``): the tenant's BM25 statistics (``tenant_stats``); with a
    user in the scope, of the memories that user reads."""
    match = {str(i): term_match(w) for i, w in enumerate(words)}
    aggs: dict[str, Any] = {"len": {"stats": {"field": LENGTH_FIELD}}}
    if match:
        aggs["df"] = {"filters": {"filters": match}}
    return {
        "size": 0,
        "track_total_hits": True,
        "query": {"bool": {"filter": scope.filters()}},
        "aggs": aggs,
    }


def event_statements(scope: TenantScope, event: str, size: int) -> dict[str, Any]:
    """The tenant's (its user's) dated memories that name ``event``, newest first: what
    "before/since the <event>" is read against (``events.event_scope``)."""
    return {
        "size": size,
        "_source": ["content", "timestamp"],
        "query": {
            "bool": {
                "must": [{"match_phrase": {PHRASE_FIELD: event}}],
                "filter": [*scope.filters(), {"exists": {"field": "timestamp"}}],
            }
        },
        "sort": [{"timestamp": "desc"}],
    }
