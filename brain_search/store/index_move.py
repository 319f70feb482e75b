"""The encoder move: the shared memories alias moved to the next index version (``<prefix>-memories-v<n+1>``),
every memory re-encoded by the target encoder (``brain-search reindex --encoder NAME``). Its phases,
passes and state are ``Move``'s (``store/moves.py``); this module says where it goes, what its swap
changes (the alias) and that it refuses to start while a tenant's move to its own index is unfinished.
"""

from __future__ import annotations

import logging
from typing import Any

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.base import EncoderInfo, index_meta
from brain_search.encoders.embedding import Embedder
from brain_search.errors import SetupError
from brain_search.store.moves import Move, Progress, Scope, next_index

log = logging.getLogger(__name__)


class IndexMove(Move):
    """The memories alias moved to the next index version, every memory re-encoded by
    ``embedder`` (the target encoder's passage side). The old index is kept (rollback). Tenants
    with an index of their own are not moved: they keep the encoder their index records, which
    every process follows per tenant (``store/following.py``)."""

    def __init__(
        self,
        client: OpenSearch,
        settings: Settings,
        target: EncoderInfo,
        embedder: Embedder,
        *,
        grace_s: float = 10.0,
        progress: Progress | None = None,
    ) -> None:
        if embedder.name != target.name:
            raise SetupError(f"the move's embedder is {embedder.name}, not {target.name}")
        super().__init__(client, settings, embedder, Scope(), grace_s=grace_s, progress=progress)
        self.target = target
        self.alias = settings.memories_alias

    def current(self) -> str:
        return next(iter(self.client.indices.get_alias(name=self.alias)))

    def pending(self) -> tuple[str, str] | None:
        """(source, target) of a move begun and not done, found from the alias's index and the next."""
        current = self.current()
        for source, target in ((current, next_index(self.settings, current)), (self._moved_from(current), current)):
            if source and self.client.indices.exists(index=target):
                state = self._state(target)
                if state.get("from") == source and state.get("phase") != "done":
                    return source, target
        return None

    def locate(self) -> tuple[str, str, bool]:
        found = self.pending()
        if found is not None:
            return (*found, True)
        unfinished = self._unfinished_tenant_moves()
        if unfinished:  # its resumed copy would read from the old index
            raise SetupError(
                f"the move of {len(unfinished)} tenants to their own index is unfinished "
                f"({', '.join(unfinished[:3])}): run `brain-search tenant-index TENANT` for each to finish it "
                "first (docs/operations.md)"
            )
        source = self.current()
        target = next_index(self.settings, source)
        self._create(target, self._body(), source)
        return source, target, False

    def encoder_name(self, target: str) -> str:
        return self.target.name

    def _unfinished_tenant_moves(self) -> list[str]:
        """The tenants whose own index's move is begun and not done (one mapping request)."""
        pattern = f"{self.alias}-tenant-*"
        got = self.client.indices.get_mapping(index=pattern, params={"allow_no_indices": "true"})
        out = []
        for body in got.values():
            state = ((body.get("mappings") or {}).get("_meta") or {}).get("move") or {}
            if state.get("phase") not in (None, "done"):
                out.append(str(state.get("tenant") or "?"))
        return sorted(out)

    def _body(self) -> dict[str, Any]:
        from brain_search.store.templates import memories_template

        s = self.settings.model_copy(update={"embedding_model": self.target.name})
        template = memories_template(s, self.target.dimension)["template"]
        body = {"settings": template["settings"], "mappings": template["mappings"]}
        body["mappings"]["_meta"] = index_meta(self.target)
        return body

    def swap(self, source: str, target: str) -> None:
        self.client.indices.update_aliases(
            body={
                "actions": [
                    {"remove": {"index": source, "alias": self.alias}},
                    {"add": {"index": target, "alias": self.alias, "is_write_index": True}},
                ]
            }
        )
        log.warning("memories alias %s moved from %s to %s (%s)", self.alias, source, target, self.target.name)
