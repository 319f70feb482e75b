"""Every per-tenant cache of a process is bounded by bytes, not by a count (issue 67 item 5), and
what it counts is what the process holds: each real cache is filled past its budget with entries
as its code makes them, and ``tracemalloc`` reads what it then holds (pure: no engine, no model).

Beside it: the ``ByteLRU`` itself, and that a miss costs one engine round trip at most."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCache
from brain_search.feedback.store import FeedbackStore
from brain_search.lru import ENTRY_BYTES, ByteLRU, deep_size, entry_size
from brain_search.retrieval.engine.tenant_stats import StatsCache, TenantStats
from brain_search.store.cache_budget import SHARES, cache_budgets
from brain_search.tenancy.auth import KeyStore, hash_key
from brain_search.tenancy.ratelimit import Limit, LocalBuckets

BUDGET = 2 * 2**20
S = load_settings()


def test_an_lru_by_bytes_keeps_the_most_recent_within_its_budget() -> None:
    one = entry_size("k0", "v" * 100)
    lru: ByteLRU[str, str] = ByteLRU(3 * one + 10)
    for i in range(5):
        lru.put(f"k{i}", "v" * 100)
    assert list(lru) == ["k2", "k3", "k4"] and lru.bytes == 3 * one <= lru.max_bytes
    assert lru.get("k2") == "v" * 100 and list(lru) == ["k3", "k4", "k2"]  # touched: now the newest
    lru.put("big", "v" * 500)  # a larger entry pushes out as many as it takes
    assert "big" in lru and lru.bytes <= lru.max_bytes and len(lru) < 3
    lru.put("huge", "v" * 10_000)  # larger than the whole budget: never kept
    assert "huge" not in lru and lru.bytes <= lru.max_bytes
    assert lru.pop("big") == "v" * 500 and lru.pop("big") is None
    lru.put("a1", "x")
    lru.put("b1", "y")
    assert lru.drop(lambda k, _: k.startswith("a")) == 1 and "a1" not in lru
    assert lru.bytes == sum(entry_size(k, lru.peek(k)) for k in lru)
    lru.clear()
    assert len(lru) == 0 and lru.bytes == 0 and ByteLRU[str, str](0).max_bytes == 0


def test_deep_size_counts_what_an_entry_holds_once() -> None:
    base = np.zeros((1, 384), np.float32)
    view = base[0]
    assert deep_size(view) >= base.nbytes  # a view keeps its array alive
    shared = "x" * 1000
    assert deep_size((shared, shared)) < 2 * sys.getsizeof(shared)
    assert entry_size("k", None) == ENTRY_BYTES + sys.getsizeof("k")


def test_the_budget_is_shared_out_whole() -> None:
    assert sum(SHARES.values()) == pytest.approx(1.0)
    b = cache_budgets(S.model_copy(update={"cache_mib": 100}))
    assert b.total <= 100 * 2**20 and b.total >= 100 * 2**20 - 10
    assert cache_budgets(S.model_copy(update={"cache_mib": 0})).total == 0


# ------------------------------------------------------------------ what each cache holds, measured
def _held(fill: Callable[[int], None], entries: int) -> int:
    """Bytes still allocated after ``fill(i)`` for each entry, the cache built before (traced)."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(entries):
        fill(i)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return held


def _bounded(lru: ByteLRU[Any, Any], held: int) -> None:
    assert lru.bytes <= lru.max_bytes
    # what the process holds stays under the budget (the estimate errs high, never far)
    assert held <= lru.max_bytes * 1.02, f"{held:,} bytes held for a budget of {lru.max_bytes:,}"
    assert held >= lru.max_bytes * 0.5, f"{held:,} bytes held: the estimate is far too high"


class _Keys:
    """The keys index's GET: every key is a tenant's (a user's for odd ones)."""

    def get(self, index: str, id: str, **_: Any) -> dict[str, Any]:
        n = int(id[-8:], 16)
        return {"_source": {"tenant_id": f"tenant-{n}", "revoked": False, "user_id": f"user-{n}" if n % 2 else None}}


def test_the_key_cache_holds_its_budget() -> None:
    keys = KeyStore(_Keys(), S)  # type: ignore[arg-type]
    keys._cache = ByteLRU(BUDGET)
    made = [f"bsk_{i}" for i in range(12_000)]
    held = _held(lambda i: keys.resolve(made[i]), len(made))
    assert len(keys._cache) < len(made)
    _bounded(keys._cache, held)


def test_the_refused_key_cache_holds_its_budget() -> None:
    class _Unknown:
        def get(self, **_: Any) -> dict[str, Any]:
            from opensearchpy import NotFoundError

            raise NotFoundError(404, "not_found", {})

    keys = KeyStore(_Unknown(), S)  # type: ignore[arg-type]
    keys._refused = ByteLRU(BUDGET)
    made = [f"bsk_random_{i}" for i in range(12_000)]

    def refuse(i: int) -> None:
        with pytest.raises(Exception, match="unknown API key"):
            keys.resolve(made[i])

    _bounded(keys._refused, _held(refuse, len(made)))


def test_the_rate_limit_cache_holds_its_budget() -> None:
    class _Tenants:
        def get(self, index: str, id: str, **_: Any) -> dict[str, Any]:
            return {"_source": {"rate_limit_per_s": 10.0, "rate_limit_burst": 20}}

    keys = KeyStore(_Tenants(), S)  # type: ignore[arg-type]
    keys._limits = ByteLRU(BUDGET)
    tenants = [f"tenant-{i}" for i in range(12_000)]
    _bounded(keys._limits, _held(lambda i: keys.rate_limit(tenants[i]), len(tenants)))


def test_the_local_buckets_hold_their_budget() -> None:
    buckets = LocalBuckets(BUDGET)
    names = [f"brain:ratelimit:{hash_key(f'k{i}')}" for i in range(12_000)]
    limit = Limit(10.0, 20)
    _bounded(buckets._buckets, _held(lambda i: buckets.wait_s(names[i], limit, now=float(i)), len(names)))


def test_the_retention_cache_holds_its_budget() -> None:
    class _Tenants:
        def get(self, **_: Any) -> dict[str, Any]:
            return {"_source": {"feedback_retention_s": 86_400}}

    store = FeedbackStore(_Tenants(), S)  # type: ignore[arg-type]
    store._retention = ByteLRU(BUDGET)
    tenants = [f"tenant-{i}" for i in range(12_000)]
    _bounded(store._retention, _held(lambda i: store.retention_s(tenants[i]), len(tenants)))


def test_the_tenant_statistics_hold_their_budget_whatever_each_tenant_brings() -> None:
    cache = StatsCache(max_bytes=BUDGET)

    def count(i: int) -> None:  # tenants with 0 to 599 counted words each, one dict per count
        words = {f"w{i}x{j}": 300 + j for j in range(i % 600)}
        cache.put(f"tenant-{i}", TenantStats(100 + i, 1000.0 + i, 100 + i, words))

    _bounded(cache._stats, _held(count, 1200))
    assert len(cache._stats) < 1200


class _Encoder:
    name = "all-MiniLM-L6-v2"
    dimension = 384

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.full((len(texts), 384), 0.5, np.float32)  # as the encoder answers: a (1, 384) array


def test_the_query_vectors_hold_their_budget() -> None:
    cache = QueryCache(_Encoder(), BUDGET)  # type: ignore[arg-type]
    cache.encode_query("warm numpy up", "t")
    questions = [f"what did we decide about the budget of item {i} last week?" for i in range(3000)]
    _bounded(cache._data, _held(lambda i: cache.encode_query(questions[i], f"tenant-{i % 500}"), len(questions)))


# ------------------------------------------------------------------ a miss: one round trip at most
def test_an_evicted_rate_limit_costs_one_lookup() -> None:
    class _Counted:
        gets = 0

        def get(self, index: str, id: str, **_: Any) -> dict[str, Any]:
            _Counted.gets += 1
            return {"_source": {}}

    keys = KeyStore(_Counted(), S)  # type: ignore[arg-type]
    keys._limits = ByteLRU(entry_size("tenant-0", (None, 0.0)) + 10)  # room for one tenant
    assert keys.rate_limit("tenant-0") is None and _Counted.gets == 1
    assert keys.rate_limit("tenant-0") is None and _Counted.gets == 1  # cached
    keys.rate_limit("tenant-1")  # pushes tenant-0 out
    assert keys.rate_limit("tenant-0") is None and _Counted.gets == 3  # one lookup again, no more
