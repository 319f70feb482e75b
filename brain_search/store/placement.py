"""Where a tenant's memories live: the shared memories alias, or the tenant's own index.

A tenant gets its own index with ``brain-search tenant-index TENANT`` (``store/tenant_move.py``).
The placement is recorded in the engine as an alias, ``<prefix>-memories-tenant-<id>-<hash>``,
which that move puts on the tenant's index in one alias action once its memories are copied: the
alias exists exactly when the tenant's reads and writes go to it. Every path that reads or writes
memories asks ``Placement.index(tenant)`` for the name to use, so a process finds the tenant's
index through one lookup: every tenant alias of the prefix listed in one request, cached
``ttl_s`` (2 s, as ``store/following.py``), so a process follows a move within ``ttl_s``.

The names are pure (``tenant_alias``, ``tenant_index``); the lookup is shared per client and
prefix (``placement_for``), made on first use.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import weakref
from collections.abc import Callable

from opensearchpy import NotFoundError, OpenSearch

from brain_search.index_names import HasPrefix, IndexNames
from brain_search.store.client import uncounted

TTL_S = 2.0


def tenant_alias(names: IndexNames, tenant_id: str) -> str:
    """The alias of ``tenant_id``'s own index (pure). An index name is lower case, so the id is
    lowered and a hash of the exact id keeps ``Acme`` and ``acme`` apart."""
    slug = re.sub(r"[^a-z0-9_.-]", "_", tenant_id.lower()).lstrip("_.-") or "t"
    digest = hashlib.sha256(tenant_id.encode()).hexdigest()[:10]
    return f"{names.memories_alias}-tenant-{slug}-{digest}"


def tenant_index(names: IndexNames, tenant_id: str) -> str:
    """The concrete index behind ``tenant_alias`` (pure). It matches the memories template's
    pattern, so it is made with the memories mappings and settings."""
    return f"{tenant_alias(names, tenant_id)}-v1"


def tenant_aliases_pattern(names: IndexNames) -> str:
    return f"{names.memories_alias}-tenant-*"


class Placement:
    """Tenant → the alias its memories are read from and written to, for one prefix.

    What it holds is not per tenant: the names of the tenant aliases that exist (one per tenant
    with an index of its own, not one per tenant) and the concrete index behind each, replaced
    whole by one request every ``ttl_s``; a tenant without its own index costs nothing here. So
    it is not one of the LRUs of ``lru.py``: 100,000 tenants in the shared index hold none
    of it, and a lookup past ``ttl_s`` is that one round trip."""

    def __init__(
        self,
        client: OpenSearch,
        settings: HasPrefix,
        ttl_s: float = TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client, self.names, self.ttl_s, self.clock = client, IndexNames.of(settings), ttl_s, clock
        self._own: frozenset[str] = frozenset()
        self._index_of: dict[str, str] = {}
        self._at = float("-inf")
        self._indices: dict[str, frozenset[str]] = {}
        self._layout_at = float("-inf")
        self._lock = threading.Lock()

    @property
    def shared(self) -> str:
        return self.names.memories_alias

    def index(self, tenant_id: str) -> str:
        """The alias to read and write ``tenant_id``'s memories through."""
        alias = tenant_alias(self.names, tenant_id)
        return alias if alias in self.own() else self.shared

    def own(self) -> frozenset[str]:
        """The tenant aliases that exist (looked up again at most every ``ttl_s``)."""
        now = self.clock()
        with self._lock:
            if now - self._at < self.ttl_s:
                return self._own
        index_of = self._lookup()
        own = frozenset(index_of)
        with self._lock:
            self._own, self._index_of, self._at = own, index_of, now
        return own

    def index_of(self, alias: str) -> str | None:
        """The concrete index behind a tenant's alias (None: it has none), from the same lookup."""
        self.own()
        with self._lock:
            return self._index_of.get(alias)

    def every(self) -> list[str]:
        """The shared alias and every tenant alias: what a cross-tenant chore (purging old
        tombstones) covers."""
        return [self.shared, *sorted(self.own())]

    def forget(self) -> None:
        """Look up again on the next call (after this process moved a tenant)."""
        with self._lock:
            self._at = float("-inf")
            self._layout_at = float("-inf")

    def stale_copies(self, tenant_id: str) -> list[str]:
        """The concrete memories indices that may hold copies of ``tenant_id``'s documents without
        serving it: an earlier version of the shared index kept for rollback after an encoder move,
        the shared index once the tenant has its own, the tenant's own index left by a move that
        has not swapped. A forget, an erase and a delete reach them too, so rolling an alias back
        never brings a forgotten memory back (looked up at most every ``ttl_s``, so for that long
        after a swap the index that now serves may still be listed: what deletes there deletes
        only what is older than itself, ``version_type: external``)."""
        layout = self._layout()
        alias = tenant_alias(self.names, tenant_id)
        serving = alias if any(alias in a for a in layout.values()) else self.names.memories_alias
        shared = re.compile(re.escape(self.names.memories_alias) + r"-v[0-9]+")
        return sorted(
            index
            for index, aliases in layout.items()
            if serving not in aliases and (shared.fullmatch(index) or index.startswith(f"{alias}-v"))
        )

    def _layout(self) -> dict[str, frozenset[str]]:
        """Concrete memories index → its aliases, for the prefix (cached ``ttl_s``)."""
        now = self.clock()
        with self._lock:
            if now - self._layout_at < self.ttl_s:
                return self._indices
        with uncounted():
            got = self.client.indices.get(index=self.names.everything, params={"filter_path": "*.aliases"})
        pattern = f"{self.names.memories_alias}-"
        layout = {
            index: frozenset((body or {}).get("aliases") or {})
            for index, body in (got or {}).items()
            if index.startswith(pattern)
        }
        with self._lock:
            self._indices, self._layout_at = layout, now
        return layout

    def _lookup(self) -> dict[str, str]:
        """tenant alias → its index."""
        try:
            with uncounted():
                got = self.client.indices.get_alias(name=tenant_aliases_pattern(self.names))
        except NotFoundError:
            return {}
        # one name per own index: the cache is as small as the engine's list of them
        return {a: index for index, body in got.items() for a in (body.get("aliases") or {})}


_shared: weakref.WeakKeyDictionary[OpenSearch, dict[str, Placement]] = weakref.WeakKeyDictionary()
_shared_lock = threading.Lock()


def placement_for(client: OpenSearch, settings: HasPrefix) -> Placement:
    """The one ``Placement`` of ``client`` and ``settings``' prefix in this process (made on
    first use), so every store of a process shares one cache."""
    with _shared_lock:
        by_prefix = _shared.setdefault(client, {})
        found = by_prefix.get(settings.index_prefix)
        if found is None:
            found = by_prefix[settings.index_prefix] = Placement(client, settings)
        return found
