"""Counting a question's words while it is encoded (``BRAIN_COUNT_AHEAD``, on by default).

With the tenant's own statistics (``tenant_stats``), a question with words this process has not
counted for the tenant needs their count before its search: a round trip after the encoder. Started
on a thread before the encoder runs, it overlaps it. Measured (lab/reports/history/performance-2026-12.md, eighth
session): about 2 ms less per recall of a new question with no load; level at 50 req/s on two
cores, where both are busy anyway.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from opensearchpy import OpenSearch

from brain_search.retrieval.engine.tenant_stats import StatsCache, TenantStats, count_terms, stats_key
from brain_search.retrieval.text import query_terms
from brain_search.store.scope import TenantScope

AHEAD_EXTRA_WORDS = 8
"""words a count ahead reads past ``query_terms``' 16: the question's cue words ("exactly", "said")
leave its lexical query, so its 16 topic words can reach further into a long question"""


class CountAhead:
    """The tenant's count of a question's own words, started on a thread before the question is
    encoded (the encoder releases the GIL): a question with new words then waits for its count
    only as long as the count outlasts the encoder, instead of counting after it.

    The words are the raw question's (``query_terms`` of it, ``AHEAD_EXTRA_WORDS`` more): the
    lexical query is the question minus its cue words, so its words are almost always among them,
    and where one is not the pipeline counts it as before. A count is a pure function of the
    tenant's memories, so counting early, or more words, never changes a response. What it
    counted goes into the ``StatsCache`` when the recall reads it (``landed``)."""

    def __init__(self, client: OpenSearch, cache: StatsCache, workers: int) -> None:
        self.client, self.cache = client, cache
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="count-ahead")

    def start(self, scope: TenantScope, question: str) -> Future[TenantStats] | None:
        """The count of ``question``'s words for the tenant (its user's memories in it), started;
        None when the cache already covers them. The request is counted as the calling recall's
        (its context)."""
        words = query_terms(question, limit=16 + AHEAD_EXTRA_WORDS)
        if not words or self.cache.get(stats_key(scope), words) is not None:
            return None
        run = contextvars.copy_context().run
        return self._pool.submit(run, count_terms, self.client, scope, words)

    def landed(self, scope: TenantScope, words: Sequence[str], ahead: Future[TenantStats] | None) -> TenantStats | None:
        """The count started ahead, once it has landed, when there was one and it covers ``words``
        (or says the tenant's shard did not answer, as counting now would): made during this
        recall, so no count rides beside the search to check it. None otherwise (the cache or a
        count made now decides)."""
        if ahead is None:
            return None
        early = ahead.result()  # a failed count raises here, as counting now would
        self.cache.put(stats_key(scope), early)
        return early if not early.counted or early.covers(words) else None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass(frozen=True)
class PlanCounts:
    """Which count of the tenant's words a recall's plan searches with."""

    client: OpenSearch
    scope: TenantScope
    cache: StatsCache
    ahead: CountAhead | None

    def start(self, question: str) -> Future[TenantStats] | None:
        """The count of the question's own words, started (``CountAhead.start``); None when they
        are all counted already, or counting ahead is off."""
        return self.ahead.start(self.scope, question) if self.ahead else None

    def of(self, words: Sequence[str], started: Future[TenantStats] | None) -> tuple[TenantStats, tuple[str, ...]]:
        """The count (of the memories the scope's user reads in the tenant) and the words whose fresh count
        rides in the search: the count started ahead when it covers the words (nothing rides); else
        the cache's last count when it covers them (the words ride, and ``Retriever.search``
        checks); else a count made now (nothing rides)."""
        stats = self.ahead.landed(self.scope, words, started) if self.ahead else None
        if stats is not None:
            return stats, ()
        key = stats_key(self.scope)
        stats = self.cache.get(key, words)
        if stats is not None:
            return stats, tuple(words)
        stats = count_terms(self.client, self.scope, words)
        self.cache.put(key, stats)
        return stats, ()
