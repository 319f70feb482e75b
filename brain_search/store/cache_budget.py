"""What each per-tenant cache of a process may hold, in bytes: shares of ``cache_mib``.

One knob for the operator (``BRAIN_CACHE_MIB``, 128 by default): a process's caches together stay
under it, whatever the number of tenants. The shares follow what an entry is worth: a tenant's
counted words spare a recall a round trip and are the largest entries, a query vector spares the
encoder (3–30 ms of CPU), a key or a rate limit spares a small GET. A miss costs one engine round
trip at most (a query vector's miss: none, the encoder runs).
"""

from __future__ import annotations

from dataclasses import dataclass

from brain_search.config import Settings

MIB = 2**20

SHARES = {
    "tenant_stats": 0.45,
    "query_vectors": 0.25,
    "keys": 0.10,
    "refused_keys": 0.05,
    "rate_limits": 0.05,
    "buckets": 0.05,
    "retention": 0.05,
}


@dataclass(frozen=True)
class CacheBudgets:
    """Bytes each cache may hold."""

    tenant_stats: int
    query_vectors: int
    keys: int
    refused_keys: int
    rate_limits: int
    buckets: int
    retention: int

    @property
    def total(self) -> int:
        return sum(vars(self).values())


def cache_budgets(settings: Settings) -> CacheBudgets:
    """``cache_mib`` shared out (pure)."""
    total = settings.cache_mib * MIB
    return CacheBudgets(**{name: int(total * share) for name, share in SHARES.items()})
