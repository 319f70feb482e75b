"""Lexical scores from the tenant's own statistics (``BRAIN_LEXICAL_STATS=tenant``).

BM25's idf and length norm come from the whole index, so one tenant's memories move another's
lexical scores and even its order (tenant A adding 500 memories with "zzqx" lowered tenant B's
lexical score of "zzqx a" from 0.55 to 0.45). In this mode the lexical clause reads no index
statistics: each query term is a ``constant_score`` clause whose boost is the term's BM25 idf
computed over *the tenant's* memories (its document count and the term's document frequency, one
search of counts: before the search for a tenant's first recall in a process, inside the recall's
own ``_msearch`` after that, see ``WeightCache``), and a quoted phrase counts ``PHRASE_BOOST`` times the
idf of its words. A memory's lexical score is then the sum of the idfs of the query terms it
holds: what it says and what its own tenant holds, nothing else. What it gives up is BM25's term
frequency and length norm (measured in lab/README.md, "Tenant-independent scores").
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
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


def counts_request(tenant_id: str, words: Sequence[str]) -> str:
    """``counts_body`` as one ``_msearch`` item (header and body lines), routed to the tenant's
    shard(s): alone, or riding in a recall's own ``_msearch`` (pure)."""
    return (orjson.dumps({"routing": tenant_id}) + b"\n" + orjson.dumps(counts_body(tenant_id, words)) + b"\n").decode()


def counted(
    answer: dict[str, Any], words: Sequence[str], tenant_id: str, cache: WeightCache | None = None
) -> dict[str, float]:
    """word → idf from the counts item of an ``_msearch`` answer, given to ``cache`` too. When the
    tenant's shard did not answer (an error item: the request is routed, so a lost shard is never
    a partial count), every word weighs ``UNCOUNTED_WEIGHT`` and nothing is cached."""
    if "error" in answer:
        return dict.fromkeys(words, UNCOUNTED_WEIGHT)
    weights = weights_from(answer, words)
    if cache is not None:
        cache.put(tenant_id, int(answer["hits"]["total"]["value"]), weights)
    return weights


class WeightCache:
    """What the tenant's counts said last: (tenant, word) → the word's idf over the tenant's
    memories, and tenant → its number of memories. A bounded LRU shared by one process's recalls
    (thread-safe).

    Counting before the search costs a round trip of its own (at 50 req/s over 100k memories
    about 3 ms of wall time and 1.5 ms of API plus 1–2 ms of engine CPU per recall). Once a tenant
    has been counted, a recall picks its lexical top k by these weights and counts again *inside*
    its own ``_msearch``: every score it returns comes from that fresh count, and the cache takes
    it (``provisional``)."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._weights: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._docs: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def provisional(self, tenant_id: str, words: Sequence[str]) -> tuple[dict[str, float], bool] | None:
        """Every word's weight to pick the lexical top k with, and whether any was guessed: a
        word never counted for the tenant weighs what a word in none of its memories would
        (``idf(docs, 0)``, the most any word can). None when the tenant was never counted."""
        with self._lock:
            docs = self._docs.get(tenant_id)
            if docs is None:
                return None
            self._docs.move_to_end(tenant_id)
            out, guessed = {}, False
            for w in words:
                value = self._weights.get((tenant_id, w))
                if value is None:
                    value, guessed = idf(docs, 0), True
                else:
                    self._weights.move_to_end((tenant_id, w))
                out[w] = value
        return out, guessed

    def put(self, tenant_id: str, docs: int, weights: Mapping[str, float]) -> None:
        with self._lock:
            self._docs[tenant_id] = docs
            self._docs.move_to_end(tenant_id)
            for w, value in weights.items():
                self._weights[(tenant_id, w)] = value
                self._weights.move_to_end((tenant_id, w))
            while len(self._weights) > self.max_entries:
                self._weights.popitem(last=False)
            while len(self._docs) > self.max_entries:
                self._docs.popitem(last=False)


def term_weights(
    client: OpenSearch,
    alias: str,
    tenant_id: str,
    terms: Sequence[str],
    phrases: Sequence[str],
    cache: WeightCache | None = None,
) -> dict[str, float]:
    """word → its idf over the tenant's memories: one routed search of counts (one sub-search
    per word cost the engine a search context each), sent as an ``_msearch`` of one so that a
    shard that does not answer is an error in the answer, not an HTTP 503 the client retries.
    ``cache`` takes what was counted.

    When the tenant's shard does not answer, every word weighs ``UNCOUNTED_WEIGHT``: the
    recall's own search meets the same shard and is a 503 naming it, or, with ``allow_partial``,
    what the other shards hold, marked partial."""
    words = words_to_weigh(terms, phrases)
    if not words:
        return {}
    answer = client.msearch(body=counts_request(tenant_id, words), index=alias)["responses"][0]
    return counted(answer, words, tenant_id, cache)


def term_boost(term: str, weights: dict[str, float]) -> float:
    return max(weights.get(term, 0.0), 1e-6)


def phrase_boost(phrase: str, weights: dict[str, float]) -> float:
    return queries.PHRASE_BOOST * max(sum(weights.get(w, 0.0) for w in query_terms(phrase)), 1e-6)


def weighted_clause(terms: Sequence[str], phrases: Sequence[str], weights: dict[str, float]) -> dict[str, Any]:
    """The lexical clause in this mode: a constant score per term and phrase, boosted by
    ``clause_boosts`` (pure)."""
    filters = [queries.term_match(t) for t in terms] + [queries.phrase_match(p) for p in phrases]
    boosts = clause_boosts(terms, phrases, weights)
    should = [{"constant_score": {"filter": f, "boost": b}} for f, (_, b) in zip(filters, boosts, strict=True)]
    if not should:
        return {"match_none": {}}
    return {"bool": {"should": should, "minimum_should_match": 1}}


def clause_boosts(terms: Sequence[str], phrases: Sequence[str], weights: dict[str, float]) -> list[tuple[str, float]]:
    """Each clause of ``weighted_clause`` by its ``matched_queries`` name, with its boost, in the
    query's order: computed once per recall, then read for every hit (``score_of``) (pure)."""
    out = [(queries.term_name(i), term_boost(t, weights)) for i, t in enumerate(terms)]
    return out + [(queries.phrase_name(i), phrase_boost(p, weights)) for i, p in enumerate(phrases)]


def score_of(matched: set[str] | frozenset[str], boosts: Sequence[tuple[str, float]]) -> float:
    """The sum, in float64 and in the query's order, of the boosts of the clauses a memory
    matched (pure). The engine sums float32 boosts in the order of its clauses' costs, which
    other tenants' postings set, so its last bit could move with them; this sum cannot."""
    return sum(boost for name, boost in boosts if name in matched)


def lexical_score(
    matched: Iterable[str], terms: Sequence[str], phrases: Sequence[str], weights: dict[str, float]
) -> float:
    """What ``weighted_clause`` scores a memory, from the names of the clauses it matched
    (``queries.coverage_filter``'s ``matched_queries``) (pure; ``score_of`` over
    ``clause_boosts``)."""
    return score_of(set(matched), clause_boosts(terms, phrases, weights))
