"""A tenant's own index (``brain-search tenant-index TENANT``): its memories moved out of the
shared index while both serve, with the machinery of every move (``store/moves.py``).

The move's source is the shared alias's index, its target the tenant's index
(``store/placement.py``: ``<prefix>-memories-tenant-<id>-<hash>-v1``, made from the memories
template with the shared index's encoder record, or another encoder's: ``encoder``), its scope
the tenant's documents (memories and tombstones, on the tenant's routing). With the shared
index's encoder it re-encodes nothing (vectors are copied as they are); with another it
re-encodes every memory with that encoder's passage side (``embedder``), and the final pass
re-encodes what a writer not yet following the swap wrote with the old one.

- **swap**: the tenant's alias is put on its index. That alias *is* the placement: every process
  finds it through ``Placement`` within 2 s and reads and writes the tenant there from then on.
- **grace** and **final** as every move: what a process still on the old placement wrote or
  deleted in the shared index is carried over.
- **purge**: the tenant's documents go from the shared index (tombstones too), each only once its
  own index is seen to hold it, so nothing holds a second copy and nothing is lost; then, once
  every process has followed the swap, a **sweep** does the same for a write still on its way. A
  recall only ever reads one index per tenant.

Rollback before the purge: remove the tenant's alias (the shared index still holds everything
the final pass compares). After it, the way back is a move in the other direction (not built).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.base import encoder_info, index_meta, recorded_encoder
from brain_search.encoders.embedding import Embedder
from brain_search.errors import SetupError
from brain_search.index_names import IndexNames
from brain_search.store.move_lease import tenant_key
from brain_search.store.moves import Move, PassCounts, Progress, Scope, next_index
from brain_search.store.placement import TTL_S, placement_for, tenant_alias, tenant_index
from brain_search.store.scope import tenant_documents

log = logging.getLogger(__name__)


class TenantMove(Move):
    """``tenant_id``'s memories moved from the shared index to its own."""

    def __init__(
        self,
        client: OpenSearch,
        settings: Settings,
        tenant_id: str,
        grace_s: float = 10.0,
        *,
        progress: Progress | None = None,
        encoder: str | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        """``encoder``: the tenant index's encoder (default: the shared index's); ``embedder``: its
        passage side, needed when it is another than the shared index's (made on demand otherwise)."""
        super().__init__(
            client, settings, None, Scope(tenant_documents(tenant_id), tenant_id), grace_s=grace_s, progress=progress
        )
        self.encoder = encoder_info(encoder).name if encoder else None
        self._embedder = embedder
        self.tenant_id = tenant_id
        self.lease_key = tenant_key(tenant_id)
        self.names = IndexNames.of(settings)
        self.alias = tenant_alias(self.names, tenant_id)
        self.index = tenant_index(self.names, tenant_id)

    def locate(self) -> tuple[str, str, bool]:
        located = self._locate()
        target_encoder = self.encoder_name(located[1])
        if target_encoder != self._source_encoder(located[0]):
            if self._embedder is None or self._embedder.name != target_encoder:
                from brain_search.encoders.factory import make_document_embedder

                s = self.settings.model_copy(update={"embedding_model": target_encoder})
                self._embedder = make_document_embedder(s)
            self.embedder = self._embedder
        if self.encoder and target_encoder != self.encoder:
            raise SetupError(
                f"tenant {self.tenant_id} already has its own index with encoder {target_encoder}: moving it to "
                f"{self.encoder} is a move of its own index, not built yet (docs/operations.md)"
            )
        return located

    def _source_encoder(self, source: str) -> str:
        return str(recorded_encoder({k: v for k, v in self._meta(source).items() if k != "move"})["name"])

    def _locate(self) -> tuple[str, str, bool]:
        if self.client.indices.exists(index=self.index):
            state = self._state(self.index)
            source = str(state.get("from") or "") or None
            if source is None:
                raise SetupError(f"{self.index} exists and is no move of tenant {self.tenant_id}: delete it first")
            if state.get("phase") in ("copy", "catch-up") and source != self._shared_index():
                raise SetupError(
                    f"the unfinished move of tenant {self.tenant_id} copies from {source}, which no longer serves "
                    f"the shared alias: delete {self.index} (it holds copies only, nothing reads it yet) and run again"
                )
            return source, self.index, True
        source = self._shared_index()
        self._create(self.index, self._body(source), source, tenant=self.tenant_id)
        return source, self.index, False

    def _shared_index(self) -> str:
        """The shared alias's index, refused while an encoder move of it is under way."""
        current = next(iter(self.client.indices.get_alias(name=self.names.memories_alias)))
        following = next_index(self.settings, current)
        moving = self._state(current).get("phase") not in (None, "done")
        if not moving and self.client.indices.exists(index=following):
            state = self._state(following)
            moving = state.get("from") == current and state.get("phase") != "done"
        if moving:
            raise SetupError("an encoder move of the shared index is under way: finish it first (brain-search reindex)")
        return current

    def _body(self, source: str) -> dict[str, Any]:
        """The memories template's settings and mappings for the shared index's encoder, with its
        encoder record."""
        from brain_search.store.templates import memories_template

        meta = {k: v for k, v in self._meta(source).items() if k != "move"}
        info = encoder_info(self.encoder or str(recorded_encoder(meta)["name"]))
        if self.encoder:
            meta = index_meta(info)
        s = self.settings.model_copy(update={"embedding_model": info.name})
        template = memories_template(s, info.dimension)["template"]
        body = {"settings": template["settings"], "mappings": template["mappings"]}
        body["mappings"]["_meta"] = meta
        return body

    def swap(self, source: str, target: str) -> None:
        self.client.indices.update_aliases(
            body={"actions": [{"add": {"index": target, "alias": self.alias, "is_write_index": True}}]}
        )
        placement_for(self.client, self.settings).forget()  # this process follows at once
        log.warning("tenant %s: reads and writes go to %s (alias %s)", self.tenant_id, target, self.alias)

    def purge(self, source: str, target: str) -> PassCounts:
        """The tenant's documents go from the shared index, each once its own index holds it; then,
        after every process has followed the swap, the same sweep again."""
        counts = self._purge_copied(source, target, "purge")
        time.sleep(TTL_S)
        sweep = self._purge_copied(source, target, "sweep")
        counts.seen += sweep.seen
        counts.written += sweep.written
        counts.skipped += sweep.skipped
        counts.deleted += sweep.deleted
        log.warning(
            "tenant %s: %d purged from %s (%d copied first)", self.tenant_id, counts.deleted, source, counts.written
        )
        return counts
