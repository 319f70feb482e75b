"""The bounded caches of a process (API keys, refused keys, rate limits, tenant statistics, query
vectors, retention, local buckets): LRUs bounded by the memory their entries take, not by their
number, so that however many tenants come, and whatever each one brings (a tenant's counted words
are a few bytes or a few hundred kilobytes), a cache holds at most its share of ``cache_mib``
(``cache_budget.py``), the least recently used out first.

An entry's bytes are what ``sys.getsizeof`` says of its key, its value and everything they hold
(``deep_size``), plus what the cache itself spends on it (``ENTRY_BYTES``). Objects an entry
shares with the rest of the process (an interned string, a small int) are counted as its own, so
the figure errs high and the bound holds (``tests/unit/test_cache_bounds.py`` checks it against
what ``tracemalloc`` sees).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import numpy as np

K = TypeVar("K")
V = TypeVar("V")

ENTRY_BYTES = 200
"""what an entry costs the cache beyond its key and value: the ordered dict's slot and link (about
110 bytes, measured, more while its table grows) and the (value, size) pair stored (84)"""

_ATOMS = (str, bytes, int, float, bool, type(None))


def deep_size(obj: object, seen: set[int] | None = None) -> int:
    """``sys.getsizeof`` of ``obj`` and of every object it holds: strings, numbers, tuples, lists,
    sets, dicts, numpy arrays (with the array a view is of), dataclasses and other objects'
    attributes; each object once (``seen``, shared between calls that count one entry)."""
    seen = set() if seen is None else seen
    total, stack = 0, [obj]
    while stack:
        o = stack.pop()
        if o is None or id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, _ATOMS):
            continue
        if isinstance(o, np.ndarray):
            if o.base is not None:
                stack.append(o.base)  # a view: the array it keeps alive
            continue
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, tuple | list | set | frozenset):
            stack.extend(o)
        else:
            attrs = getattr(o, "__dict__", None)
            if attrs is not None:
                stack.append(attrs)
            for slot in getattr(type(o), "__slots__", ()):
                stack.append(getattr(o, slot, None))
    return total


def entry_size(key: object, value: object) -> int:
    """An entry's bytes as a ``ByteLRU`` counts them by default (pure)."""
    seen: set[int] = set()
    return ENTRY_BYTES + deep_size(key, seen) + deep_size(value, seen)


class ByteLRU(Generic[K, V]):
    """A least-recently-used map whose entries take at most ``max_bytes`` together (``entry_size``
    of each, or ``size_of``). An entry larger than the whole budget is not kept. Not thread-safe:
    its owner holds its own lock around every call, as it did around the dict before."""

    def __init__(self, max_bytes: int, size_of: Callable[[K, V], int] = entry_size) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self.size_of = size_of
        self.bytes = 0
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The value, now the most recently used; None when absent."""
        hit = self._data.get(key)
        if hit is None:
            return None
        self._data.move_to_end(key)
        return hit[0]

    def peek(self, key: K) -> V | None:
        """The value without touching its place; None when absent."""
        hit = self._data.get(key)
        return None if hit is None else hit[0]

    def put(self, key: K, value: V) -> None:
        """``key`` → ``value`` as the most recently used, the least recently used out past ``max_bytes``."""
        self.pop(key)
        size = self.size_of(key, value)
        if size > self.max_bytes:
            return
        self._data[key] = (value, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, gone) = self._data.popitem(last=False)
            self.bytes -= gone

    def pop(self, key: K) -> V | None:
        hit = self._data.pop(key, None)
        if hit is None:
            return None
        self.bytes -= hit[1]
        return hit[0]

    def drop(self, unwanted: Callable[[K, V], bool]) -> int:
        """Remove every entry ``unwanted`` says so of; returns how many went."""
        gone = [k for k, (v, _) in self._data.items() if unwanted(k, v)]
        for k in gone:
            self.pop(k)
        return len(gone)

    def clear(self) -> None:
        self._data.clear()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)
