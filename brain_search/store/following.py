"""A running process follows each index to its encoder.

A process checks at start that its encoder is the one the memories index records, and refuses
to start otherwise (``encoders.base.check_index_encoder``). When a re-embedding move
(``store/moves.py``) swaps the alias to an index of another encoder while the process runs, the
process follows: ``FollowingEmbedder`` asks ``IndexEncoder`` which encoder wrote the alias's index
(looked up again at most every ``ttl_s``) and encodes with that one, made on first use. So the
API's recalls and the workers' writes change encoder within ``ttl_s`` of the swap, with no
restart and no downtime; a restart must then name the new encoder (``BRAIN_EMBEDDING_MODEL``).

A tenant with an index of its own (``brain-search tenant-index T --encoder NAME``) is encoded
with that index's encoder (``for_tenant``): one API and one worker serve an English tenant on the
default encoder and a multilingual one beside it, each encoder loaded on first use.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from opensearchpy import OpenSearch

from brain_search.encoders.base import recorded_encoder
from brain_search.errors import SetupError
from brain_search.store.client import uncounted
from brain_search.store.placement import Placement, placement_for

if TYPE_CHECKING:
    from brain_search.config import Settings

log = logging.getLogger(__name__)


class IndexEncoder:
    """The name of the encoder that wrote the index an alias points to: the shared memories alias
    (``alias``), or a tenant's own (found through ``placement``), cached ``ttl_s``. An index's
    record never changes, so only the alias is looked up again. Holds one name per concrete
    memories index (not per tenant: tenants in the shared index share its entry)."""

    def __init__(
        self,
        client: OpenSearch,
        alias: str,
        ttl_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        placement: Placement | None = None,
    ):
        self.client, self.alias, self.ttl_s, self.clock = client, alias, ttl_s, clock
        self.placement = placement
        self._by_index: dict[str, str] = {}
        self._index: str | None = None
        self._at = float("-inf")
        self._lock = threading.Lock()

    def name(self, alias: str | None = None) -> str:
        """The encoder of ``alias``'s index (the shared alias's by default)."""
        if alias and alias != self.alias and self.placement is not None:
            index = self.placement.index_of(alias)
            if index is not None:
                return self._encoder_of(index)
        now = self.clock()
        with self._lock:
            if self._index is not None and now - self._at < self.ttl_s:
                return self._by_index[self._index]
        # a cache's refresh, not a round trip of the recall that happened to make it (the count a
        # recall reports, ``timings.engine_requests``, stays what the recall itself asked)
        with uncounted():
            index = next(iter(self.client.indices.get_alias(name=self.alias)))
        name = self._encoder_of(index)
        with self._lock:
            self._index, self._at = index, now
        return name

    def _encoder_of(self, index: str) -> str:
        found = self._by_index.get(index)
        if found is None:
            with uncounted():
                mapping = self.client.indices.get_mapping(index=index)
            meta = next(iter(mapping.values()))["mappings"].get("_meta")
            found = self._by_index[index] = str(recorded_encoder(meta)["name"])
        return found


class FollowingEmbedder:
    """An ``Embedder`` that encodes with the encoder of the index it writes to or reads: the
    shared alias's current index (``encode``, ``name``), or a tenant's own index
    (``for_tenant``), whose encoder may be another (a multilingual one for a tenant that writes
    several languages). ``own`` while that is the one the process started with, else one
    ``make(name)`` builds on first use (at most ``max_encoders`` in all: a clear error past it;
    ``resident_mb`` says what each one took)."""

    def __init__(
        self,
        own: Any,
        index_encoder: IndexEncoder,
        make: Callable[[str], Any],
        tenant_alias: Callable[[str], str] | None = None,
        *,
        max_encoders: int = 3,
    ) -> None:
        self.own, self.index_encoder, self.make = own, index_encoder, make
        self.tenant_alias = tenant_alias or (lambda tenant_id: index_encoder.alias)
        self.max_encoders = max_encoders
        self.dimension: int = own.dimension
        self._made: dict[str, Any] = {own.name: own}
        self.resident_mb: dict[str, float] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.index_encoder.name()

    @property
    def backend(self) -> str:
        return str(getattr(self.own, "backend", ""))

    def current(self) -> Any:
        return self._get(self.index_encoder.name())

    def for_tenant(self, tenant_id: str | None) -> Any:
        """The encoder of ``tenant_id``'s index (its own, or the shared one)."""
        if not tenant_id:
            return self.current()
        return self._get(self.index_encoder.name(self.tenant_alias(tenant_id)))

    def encoder_name(self, tenant_id: str | None) -> str:
        return str(self.for_tenant(tenant_id).name)

    def _get(self, name: str) -> Any:
        found = self._made.get(name)
        if found is None:
            with self._lock:
                found = self._made.get(name)
                if found is None:
                    if len(self._made) >= self.max_encoders:
                        raise SetupError(
                            f"an index needs encoder {name}, and this process already holds {len(self._made)} "
                            f"({', '.join(sorted(self._made))}; BRAIN_MAX_ENCODERS={self.max_encoders})"
                        )
                    log.warning("an index is written by encoder %s: loading it (%d held)", name, len(self._made) + 1)
                    before = resident_mb()
                    found = self._made[name] = self.make(name)
                    self.resident_mb[name] = max(0.0, resident_mb() - before)
        return found

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.current().encode(texts)


def for_tenant(embedder: Any, tenant_id: str | None) -> Any:
    """``embedder``'s encoder for ``tenant_id`` where it follows indices (``FollowingEmbedder``),
    else ``embedder`` itself (a fixed one: the lab's, a test's)."""
    pick = getattr(embedder, "for_tenant", None)
    return pick(tenant_id) if pick is not None else embedder


def resident_mb() -> float:
    """This process's resident memory (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def following(client: OpenSearch, settings: Settings, own: Any, make: Callable[[Settings], Any]) -> FollowingEmbedder:
    """``own`` (the process's encoder), following the shared index and each tenant's own index to
    the encoder it records; ``make(settings)`` builds another encoder's side from settings naming it."""
    placement = placement_for(client, settings)
    return FollowingEmbedder(
        own,
        IndexEncoder(client, settings.memories_alias, placement=placement),
        lambda name: make(settings.model_copy(update={"embedding_model": name})),
        tenant_alias=placement.index,
        max_encoders=settings.max_encoders,
    )
