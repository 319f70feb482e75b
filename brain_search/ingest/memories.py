"""Reading and deleting one memory of a tenant (routed by tenant, through the alias).

A delete leaves a tombstone (``ingest/tombstones.py``) at the memory's id and at each stored piece
of a chunked memory, with the delete's version: no write accepted before the delete can bring it
back, whether it is still queued, retrying or redelivered.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from opensearchpy import ConflictError, NotFoundError, OpenSearch

from brain_search.config import Settings
from brain_search.errors import Conflict, InvalidInput, NotFound, StoreUnavailable
from brain_search.ingest.models import MemoryOut
from brain_search.ingest.tombstones import (
    delete_older_copies,
    is_tombstone,
    purge_query,
    tombstone_entries,
    write_versioned,
)
from brain_search.store.documents import memory_doc_id, with_view
from brain_search.store.placement import placement_for
from brain_search.store.scope import AGENT_FIELD, TENANT_FIELD, USER_FIELD, TenantScope, UserScope, tenant_of


def encode_cursor(memory_id: str) -> str:
    return base64.urlsafe_b64encode(memory_id.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("cursor", "not a cursor this API gave", where="query") from None
    if not raw:
        raise InvalidInput("cursor", "not a cursor this API gave", where="query")
    return raw


def memory_out(source: dict[str, Any], version: int | None) -> MemoryOut:
    return MemoryOut(**{k: v for k, v in source.items() if k in MemoryOut.model_fields}, version=version)


@dataclass(frozen=True)
class Stored:
    """A live memory as read: its document, its version (the ETag) and the engine's sequence
    number and primary term, which make a later write conditional on nothing having changed."""

    source: dict[str, Any]
    version: int
    seq_no: int
    primary_term: int


@dataclass(frozen=True)
class Deletion:
    stored: bool  # a stored memory, or stored pieces of it, were removed
    pieces: int  # stored pieces of a chunked memory that were removed


class MemoryStore:
    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        self.placement = placement_for(client, settings)

    def index(self, tenant_id: str) -> str:
        """The alias ``tenant_id``'s memories are read and written through (store/placement.py)."""
        return self.placement.index(tenant_id)

    def scope(self, tenant_id: str, user: UserScope | None = None) -> TenantScope:
        """The tenant's (and ``user``'s) scope, where its memories live now: one lookup per read
        or write."""
        return TenantScope.of(self.placement, tenant_id, user)

    def get(self, tenant_id: str, memory_id: str, scope: UserScope | None = None) -> MemoryOut:
        at = self.read(tenant_id, memory_id, with_vector=False, scope=scope)
        return memory_out(at.source, at.version)

    def stored(self, tenant_id: str, memory_id: str, with_vector: bool = True) -> tuple[dict[str, Any], int]:
        """The stored document of a live memory and its version; NotFound otherwise."""
        at = self.read(tenant_id, memory_id, with_vector)
        return at.source, at.version

    def read(self, tenant_id: str, memory_id: str, with_vector: bool = True, scope: UserScope | None = None) -> Stored:
        """A live memory as stored (real-time); NotFound otherwise (a tombstone included, and a
        memory ``scope`` does not hold: another user's memory is not found, never forbidden)."""
        at = self.scope(tenant_id, scope)
        params = at.params(**({} if with_vector else {"_source_excludes": "embedding"}))
        try:
            r = self.client.get(index=at.index, id=memory_doc_id(tenant_id, memory_id), params=params)
        except NotFoundError:
            raise NotFound("memory", memory_id) from None
        src = r["_source"]
        # the id embeds the tenant (belt and braces), and another user's memory is not found
        if is_tombstone(src) or not at.holds(src):
            raise NotFound("memory", memory_id)
        return Stored(src, int(r["_version"]), int(r["_seq_no"]), int(r["_primary_term"]))

    def write_if(
        self, tenant_id: str, memory_id: str, source: dict[str, Any], at: Stored, *, refresh: bool = True
    ) -> Stored | None:
        """Store ``source`` (its vector included, not re-embedded) only if the memory is still as
        ``at`` read it (the engine's ``if_seq_no`` / ``if_primary_term``: compare-and-set); None
        when anything was written there since, a delete's tombstone included."""
        scope = self.scope(tenant_id)
        params = scope.params(if_seq_no=at.seq_no, if_primary_term=at.primary_term)
        if refresh:
            params["refresh"] = "wait_for"
        doc = with_view(source)  # the view follows the changed fields
        try:
            r = self.client.index(index=scope.index, id=memory_doc_id(tenant_id, memory_id), body=doc, params=params)
        except ConflictError:
            return None
        return Stored(doc, int(r["_version"]), int(r["_seq_no"]), int(r["_primary_term"]))

    def held_elsewhere(self, tenant_id: str, owners: dict[str, UserScope]) -> list[str]:
        """Of ``owners`` (memory id → the owner a write gives it), the ids stored live for another
        owner: a write never moves a memory to another user (one search, real-time enough: the
        memories of a write accepted before and not yet stored are not seen)."""
        if not owners:
            return []
        scope = self.scope(tenant_id)
        body = {
            "query": {"bool": {"filter": [*scope.tenant_only(), {"terms": {"memory_id": sorted(owners)}}]}},
            "size": len(owners),
            "_source": ["memory_id", USER_FIELD, AGENT_FIELD],
        }
        r = self.client.search(index=scope.index, body=body, params=scope.params())
        taken = []
        for h in r["hits"]["hits"]:
            src = h["_source"]
            mine = owners.get(src.get("memory_id", ""))
            if mine is not None and not mine.owns(src):  # a tombstone has no tenant_id: never a hit
                taken.append(src["memory_id"])
        return sorted(taken)

    def is_live(self, tenant_id: str, memory_id: str) -> bool:
        return self._live(self.scope(tenant_id), memory_id)

    def _live(self, scope: TenantScope, memory_id: str) -> bool:
        tenant_id = scope.tenant_id
        r = self.client.get(
            index=scope.index,
            id=memory_doc_id(tenant_id, memory_id),
            params=scope.params(_source_includes=TENANT_FIELD),
            ignore=[404],
        )
        return bool(r.get("found")) and tenant_of(r.get("_source") or {}) == tenant_id

    def _stored_pieces(self, scope: TenantScope, memory_id: str) -> list[str]:
        """Ids of the stored pieces of a chunked memory (after a refresh, so a piece written a
        moment ago is seen)."""
        self.client.indices.refresh(index=scope.index)
        body = {
            "query": {"bool": {"filter": [*scope.tenant_only(), {"term": {"metadata.chunk_of": memory_id}}]}},
            "size": 10_000,
            "_source": ["memory_id"],
        }
        r = self.client.search(index=scope.index, body=body, params=scope.params())
        return [h["_source"]["memory_id"] for h in r["hits"]["hits"]]

    def delete(self, tenant_id: str, memory_id: str, version: int, pending: bool = True) -> Deletion:
        """Tombstone the memory and its stored pieces with ``version``. Raises ``Conflict`` when a
        write of it accepted after this delete is already stored (that write wins). With nothing
        stored and nothing ``pending`` (no unfinished task carries it) nothing is written: a
        refused delete (404) leaves no tombstone."""
        scope = self.scope(tenant_id)
        stored = self._live(scope, memory_id)
        if not stored and not pending and not self._stored_pieces(scope, memory_id):
            return Deletion(stored=False, pieces=0)
        [outcome] = write_versioned(self.client, scope.index, tombstone_entries(tenant_id, [memory_id], version))
        if outcome.superseded:
            raise Conflict("a write of this memory accepted after the delete is already stored", memory_id=memory_id)
        if not outcome.ok:
            raise StoreUnavailable(f"the delete of {memory_id!r} was not stored: {outcome.reason}")
        pieces = self._stored_pieces(scope, memory_id)
        buried = write_versioned(self.client, scope.index, tombstone_entries(tenant_id, pieces, version))
        failed = [o for o in buried if not (o.ok or o.superseded)]
        if failed:
            raise StoreUnavailable(f"{len(failed)} pieces of {memory_id!r} were not deleted: {failed[0].reason}")
        delete_older_copies(
            self.client, self.placement.stale_copies(tenant_id), tenant_id, [memory_id, *pieces], version=version
        )
        return Deletion(stored=stored or bool(pieces), pieces=len(pieces))

    def list(
        self, tenant_id: str, filters: list[dict[str, Any]], limit: int, cursor: str | None
    ) -> tuple[list[MemoryOut], str | None]:
        """A page of the tenant's memories (``filters`` from ``scope_filter`` and friends), in
        memory-id order; the cursor is the last id of the page (opaque to clients)."""
        body: dict[str, Any] = {
            "query": {"bool": {"filter": filters}},
            "size": limit,
            "sort": [{"memory_id": "asc"}],
            "_source": {"excludes": ["embedding"]},
            "version": True,
        }
        if cursor:
            body["search_after"] = [decode_cursor(cursor)]
        scope = self.scope(tenant_id)
        hits = self.client.search(index=scope.index, body=body, params=scope.params())["hits"]["hits"]
        page = [memory_out(h["_source"], h.get("_version")) for h in hits]
        more = encode_cursor(hits[-1]["sort"][0]) if len(hits) == limit else None
        return page, more

    def purge_tombstones(self, ttl_s: float) -> None:
        """Delete tombstones older than ``ttl_s`` in the background (workers and the API do it at start)."""
        self.client.delete_by_query(
            index=",".join(self.placement.every()),
            body=purge_query(ttl_s),
            params={"wait_for_completion": "false", "conflicts": "proceed"},
        )
