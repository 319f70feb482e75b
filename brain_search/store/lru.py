"""The bounded caches of a process (keys, rate limits, tenant statistics, retention, local buckets),
one way to put an entry so that however many tenants come, the oldest go first."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def bounded_put(cache: OrderedDict[K, V], key: K, value: V, size: int) -> None:
    """``cache[key] = value`` as its newest entry, the oldest out past ``size`` (the caller holds
    the cache's lock)."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)
