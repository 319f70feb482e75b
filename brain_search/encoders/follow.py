"""A running process follows its index to a new encoder.

A process checks at start that its encoder is the one the memories index records, and refuses
to start otherwise (``encoders.base.check_index_encoder``). When a re-embedding move
(``store/moves.py``) swaps the alias to an index of another encoder while the process runs, the
process follows: ``FollowingEmbedder`` asks ``IndexEncoder`` which encoder wrote the alias's index
(looked up again at most every ``ttl_s``) and encodes with that one, made on first use. So the
API's recalls and the workers' writes change encoder within ``ttl_s`` of the swap, with no
restart and no downtime; a restart must then name the new encoder (``BRAIN_EMBEDDING_MODEL``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from opensearchpy import OpenSearch

from brain_search.encoders.base import recorded_encoder
from brain_search.store.client import uncounted

log = logging.getLogger(__name__)


class IndexEncoder:
    """The name of the encoder that wrote the index ``alias`` points to, cached ``ttl_s``. An
    index's record never changes, so only the alias is looked up again."""

    def __init__(self, client: OpenSearch, alias: str, ttl_s: float = 2.0, clock: Callable[[], float] = time.monotonic):
        self.client, self.alias, self.ttl_s, self.clock = client, alias, ttl_s, clock
        self._by_index: dict[str, str] = {}
        self._index: str | None = None
        self._at = float("-inf")
        self._lock = threading.Lock()

    def name(self) -> str:
        now = self.clock()
        with self._lock:
            if self._index is not None and now - self._at < self.ttl_s:
                return self._by_index[self._index]
        # a cache's refresh, not a round trip of the recall that happened to make it (the count a
        # recall reports, ``timings.engine_requests``, stays what the recall itself asked)
        with uncounted():
            index = next(iter(self.client.indices.get_alias(name=self.alias)))
            if index not in self._by_index:
                mapping = self.client.indices.get_mapping(index=index)
                meta = next(iter(mapping.values()))["mappings"].get("_meta")
                self._by_index[index] = str(recorded_encoder(meta)["name"])
        with self._lock:
            self._index, self._at = index, now
        return self._by_index[index]


class FollowingEmbedder:
    """An ``Embedder`` that encodes with the encoder of the alias's current index: ``own`` while
    that is the one the process started with, else one ``make(name)`` builds (once)."""

    def __init__(self, own: Any, index_encoder: IndexEncoder, make: Callable[[str], Any]) -> None:
        self.own, self.index_encoder, self.make = own, index_encoder, make
        self.dimension: int = own.dimension
        self._made: dict[str, Any] = {own.name: own}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.index_encoder.name()

    @property
    def backend(self) -> str:
        return str(getattr(self.own, "backend", ""))

    def current(self) -> Any:
        name = self.index_encoder.name()
        found = self._made.get(name)
        if found is None:
            with self._lock:
                found = self._made.get(name)
                if found is None:
                    log.warning("the memories index moved to encoder %s: encoding with it from now on", name)
                    found = self._made[name] = self.make(name)
        return found

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.current().encode(texts)
