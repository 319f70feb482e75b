"""BM25 over the tenant's own statistics (``BRAIN_LEXICAL_STATS=tenant``).

The engine's BM25 reads idf and the average length from the whole index (shard), so one tenant's
memories move another's lexical scores and even its order. In this mode every query term is one
clause (``queries.tenant_bm25_clause``) that the engine scores as

    idf(term) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · dl / avgdl))

with ``tf`` read from ``content.tf`` (English tokens, a similarity that scores a memory by the
term's frequency in it), ``dl`` from ``content.len`` (its number of English tokens) and ``idf`` and
``avgdl`` computed here from *the tenant's* memories: its number of memories N, the term's document
frequency df and the sum of lengths, all from one search of counts (``queries.counts_body``). That is
Lucene's BM25 with the tenant as the collection: term frequency saturates, long memories are
normalised, and nothing another tenant stores enters a score. The engine computes it for every
memory it considers, so it also picks the lexical top k. A quoted phrase is a constant clause worth
``PHRASE_BOOST`` times the idf of its words.

The counts for a recall are read once before its search (a round trip, started while the question
is encoded: ``count_ahead.CountAhead``), or, when the last count of
the tenant this process saw covers every word, ride in the recall's own ``_msearch``: the pipeline
then compares the fresh count with the one it searched with and searches again if they differ
(``TenantStats.agrees``). A response therefore depends on the request and the tenant's stored
memories only, never on what the process saw before (``tests/integration/test_determinism.py``).

A recall scoped to a user (``user_id``, ``agent_id``; ``store/scope.py``) counts what it reads: that
user's memories (and the organisation's shared ones when it includes them), so its scores are
those the same memories would have as a tenant of their own, no other user's memory enters them,
and the count costs what the user holds, not what the organisation holds (issue 67: counted over
the whole organisation, a user's recall in a 100,000-memory tenant cost the engine 2.1× the CPU of
the same memories as a tenant of their own, the count alone 5 ms; ``brain-search bench users``).
The cache keys a scope's counts apart from the tenant's (``stats_key``).

The weights are the counts' idf and average length to ``WEIGHT_DIGITS`` significant digits, and
the fresh count agrees when it gives every word the same weight, not the same count: a memory
written since the last count moves a word's idf by about one over the tenant's memories, which
rarely moves its third digit, so a recall under writes rides its count in its own search instead
of searching twice (issue 56; lab/reports/history/performance-2026-12.md, seventh session). The digits are part of
the score, whichever count a search was built with.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from opensearchpy import OpenSearch

from brain_search.lru import ENTRY_BYTES, ByteLRU
from brain_search.retrieval.engine import queries
from brain_search.retrieval.text import query_terms
from brain_search.store.scope import TenantScope

WEIGHT_DIGITS = 3
"""significant digits of a word's idf and of the average length in a lexical clause"""


def weight(x: float) -> float:
    """``x`` to ``WEIGHT_DIGITS`` significant digits (pure)."""
    return float(f"{x:.{WEIGHT_DIGITS}g}")


def idf(docs: int, df: int) -> float:
    """BM25's idf (Lucene's form, never negative) over ``docs`` documents, to ``WEIGHT_DIGITS``
    significant digits (pure)."""
    return weight(math.log(1.0 + (docs - df + 0.5) / (df + 0.5)))


@dataclass(frozen=True)
class TenantStats:
    """What one count of a tenant said: its memories, their summed length in English tokens (over
    the ``length_docs`` memories that have one) and each counted word's document frequency."""

    docs: int
    length_sum: float = 0.0
    length_docs: int = 0
    df: Mapping[str, int] = field(default_factory=dict)
    counted: bool = True
    """False: the tenant's shard did not answer (every word weighs the same, no length norm)"""

    @property
    def avgdl(self) -> float:
        """The mean length to ``WEIGHT_DIGITS`` significant digits; 0 (no length normalisation)
        when no memory has one."""
        return weight(self.length_sum / self.length_docs) if self.length_docs else 0.0

    def idf(self, word: str) -> float:
        if not self.counted:
            return UNCOUNTED_WEIGHT
        return idf(self.docs, self.df.get(word, 0))

    def covers(self, words: Sequence[str]) -> bool:
        return all(w in self.df for w in words)

    def agrees(self, other: TenantStats, words: Sequence[str]) -> bool:
        """Whether ``other`` gives every word of ``words`` the same weight and the same average
        length (a search built with either is the same search)."""
        return (
            self.counted == other.counted
            and self.avgdl == other.avgdl
            and all(w in self.df and w in other.df and self.idf(w) == other.idf(w) for w in words)
        )


UNCOUNTED_WEIGHT = 1.0
"""A word's weight when the tenant's counts could not be read (its shard did not answer)."""
UNCOUNTED = TenantStats(docs=0, counted=False)


def words_to_weigh(terms: Sequence[str], phrases: Sequence[str]) -> list[str]:
    """The query terms and the words of its phrases, once each (pure)."""
    out = list(terms)
    for p in phrases:
        out += query_terms(p)
    return list(dict.fromkeys(out))


def stats_from(answer: dict[str, Any], words: Sequence[str]) -> TenantStats:
    """``queries.counts_body``'s answer as ``TenantStats`` (pure); ``UNCOUNTED`` for an error item."""
    if "error" in answer:
        return UNCOUNTED
    aggs = answer["aggregations"]
    buckets = aggs["df"]["buckets"] if words else {}
    length = aggs["len"]
    return TenantStats(
        docs=int(answer["hits"]["total"]["value"]),
        length_sum=float(length.get("sum") or 0.0),
        length_docs=int(length.get("count") or 0),
        df={w: int(buckets[str(i)]["doc_count"]) for i, w in enumerate(words)},
    )


def counts_request(scope: TenantScope, words: Sequence[str]) -> str:
    """``queries.counts_body`` as one ``_msearch`` item (header and body lines), routed to the tenant's
    shard(s): alone, or riding in a recall's own ``_msearch`` (pure)."""
    body = queries.counts_body(scope, words)
    return (orjson.dumps(scope.params()) + b"\n" + orjson.dumps(body) + b"\n").decode()


def stats_key(scope: TenantScope) -> str:
    """What a count is of, as the ``StatsCache`` keys it: the tenant's id for the whole tenant, the
    id with the scope's user, agent and shared flag for a user's part of it (pure; a tenant id
    never holds the separator)."""
    user = scope.user
    if user.everyone:
        return scope.tenant_id
    return "\x1f".join(
        (scope.tenant_id, user.user_id or "", user.agent_id or "", "shared" if user.include_shared else "")
    )


def stats_bytes(tenant_id: str, stats: TenantStats) -> int:
    """One tenant's entry as ``lru.deep_size`` counts it: the id, the ``TenantStats`` with its
    numbers, its ``df`` dict and each word and count in it, without walking the objects one by one
    (pure; ``tests/unit/test_cache_bounds.py`` holds it to ``deep_size``)."""
    words = stats.df
    return (
        ENTRY_BYTES
        + sys.getsizeof(tenant_id)
        + STATS_FIXED_BYTES
        + sys.getsizeof(words)
        + sum(map(sys.getsizeof, words))
        + INT_BYTES * len(words)
    )


STATS_FIXED_BYTES = 64 + 304 + 4 * 32
"""a ``TenantStats`` (56), its attribute dict (288) and its four numbers (28 at most each), rounded up"""
INT_BYTES = 32
"""a document frequency (``sys.getsizeof`` of an int below 2**60: 28, rounded up)"""


class StatsCache:
    """What this process last counted of each tenant (or user scope in it: ``stats_key``): its key
    → the last count's memories and
    lengths, and each word's last count, however many memories the tenant had then. Thread-safe;
    an LRU over tenants bounded by ``max_bytes`` (the ``tenant_stats`` share of ``cache_mib``,
    ``store/cache_budget.py``; an entry is about 0.6 KB and 70–110 bytes a word, ``stats_bytes``),
    the words of each bounded by ``max_words`` too, the oldest words out first.

    It only decides whether a recall may ride its count in its own search (every word known)
    instead of counting first, and with which weights that search is built; the pipeline checks
    the fresh count against them and searches again where they differ, so what it holds never
    changes a response. Keeping the words across writes is what lets a recall under writes ride.
    A miss costs one engine round trip: the count, sent before the search (or ahead of it, while
    the question is encoded: ``count_ahead.py``)."""

    def __init__(self, max_bytes: int = 64 * 2**20, max_words: int = 2_000) -> None:
        self.max_words = max_words
        self._stats: ByteLRU[str, TenantStats] = ByteLRU(max_bytes, stats_bytes)
        self._lock = threading.Lock()

    def get(self, key: str, words: Sequence[str]) -> TenantStats | None:
        """The last count of ``key`` (``stats_key``) when it covers every word, else None."""
        with self._lock:
            stats = self._stats.peek(key)
            if stats is None or not stats.covers(words):
                return None
            self._stats.get(key)  # now the most recently used
            return stats

    def put(self, key: str, stats: TenantStats) -> None:
        """``stats`` as the last count of ``key``, its words over the older ones (the oldest words
        out past ``max_words``)."""
        if not stats.counted:
            return
        with self._lock:
            old = self._stats.peek(key)
            if old is not None:
                kept = [(w, n) for w, n in old.df.items() if w not in stats.df]
                room = max(self.max_words - len(stats.df), 0)
                df = dict(kept[len(kept) - room :] if room else [])
                df.update(stats.df)
                stats = TenantStats(stats.docs, stats.length_sum, stats.length_docs, df)
            self._stats.put(key, stats)


def count_terms(client: OpenSearch, scope: TenantScope, words: Sequence[str]) -> TenantStats:
    """The tenant's (its user's) statistics for ``words``: one routed search of counts, sent as an
    ``_msearch`` of one so that a shard that does not answer is an error in the answer
    (``UNCOUNTED``), not an HTTP 503 the client retries. The recall's own search meets the same
    shard and is a 503 naming it, or, with ``allow_partial``, what the other shards hold."""
    answer = client.msearch(body=counts_request(scope, words), index=scope.index)["responses"][0]
    return stats_from(answer, words)


def clause_weights(
    terms: Sequence[str], phrases: Sequence[str], stats: TenantStats
) -> tuple[list[float], list[float], float]:
    """Each term's idf, each phrase's constant score and the average length (pure)."""
    term_idf = [max(stats.idf(t), 1e-6) for t in terms]
    phrase_w = [queries.PHRASE_BOOST * max(sum(stats.idf(w) for w in query_terms(p)), 1e-6) for p in phrases]
    return term_idf, phrase_w, stats.avgdl


def tenant_clause(terms: Sequence[str], phrases: Sequence[str], stats: TenantStats) -> dict[str, Any]:
    """The lexical clause in this mode: the tenant's BM25 per term plus the phrases' constant
    scores, each clause named for ``matched_queries`` (pure)."""
    term_idf, phrase_w, avgdl = clause_weights(terms, phrases, stats)
    return queries.tenant_bm25_clause(terms, term_idf, phrases, phrase_w, avgdl=avgdl)
