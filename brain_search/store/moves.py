"""Moving memories to another index while the current one serves. One machinery (``Move``) and
two moves built on it: the re-embedding migration of an encoder change (``store/index_move.py``,
``brain-search reindex --encoder NAME``) and a tenant's own index (``store/tenant_move.py``,
``brain-search tenant-index TENANT``). A move is a source, a target, the documents it carries
(``Scope``: every one, or one tenant's, routed by tenant) and what it re-encodes (every memory
with the target encoder, or nothing: vectors copied as they are).

One move at a time: a run holds the move's lease (``store/move_lease.py``) from start to end; a
second run of the same move, or of one that conflicts with it (the shared index's encoder move
beside any tenant's), is refused naming the holder, and a lease that ran out is taken over from
the phase the move's record holds. The phase is read again, under the lease, before each step.

A move from ``A`` to ``B``:

1. **copy**: every document of the scope in ``A`` (memories and tombstones) is written into ``B``
   with its own external version (``external_gte``, as every write of the service), its vector
   re-encoded where the move re-encodes, and marked ``moved_from: A``. Documents whose version
   ``B`` already holds are skipped (``_mget`` of ``B``'s versions first), so a pass can restart
   from the beginning at no encoding cost: that is how a killed move resumes.
2. **catch-up**: the same pass again, for what was written to ``A`` during the copy.
3. **swap**: reads and writes move to ``B`` (the memories alias, or the tenant's placement) in
   one atomic alias action.
4. **grace**, then **final**: a last forward pass copies what landed in ``A`` while writers
   still held the old resolution (the grace is at least twice the time a process takes to
   follow a swap, ``MIN_GRACE_S``); then a pass over ``B`` re-encodes any memory that a writer
   which had not yet followed the swap wrote with the old encoder. A delete during the move is a
   tombstone in ``A``, which the forward passes carry like any write; nothing in ``B`` is ever
   deleted because ``A`` lacks it (``A`` may lack it because it was purged).
5. **purge**: what the move leaves in ``A`` (nothing for an encoder move: ``A`` is kept for
   rollback; a tenant's documents for a tenant move: the shared index must not hold a second
   copy). It deletes only what it proves ``B`` holds: page by page, a document that ``B`` holds
   at an older version is copied first, and each delete applies only if the document is
   unchanged since it was read. A **sweep** runs the purge again once every process has followed
   the swap, for a write that was still on its way.

Because every copy carries its source version and ``B`` keeps the larger one, a write or delete
accepted during the move is never undone by the copy: nothing comes back, nothing is doubled
(the document ``_id`` is the tenant and memory id). An edit (PUT, text PATCH) queued across the
swap is compare-and-set on the version it claimed (``ingest/pipeline.py``), which the copy keeps,
so it lands in ``B``. The move's state (phase, started, swapped) lives in ``B``'s mapping ``_meta``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.helpers import scan

from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.errors import SetupError
from brain_search.index_names import IndexNames
from brain_search.store.move_lease import SHARED, MoveLease
from brain_search.store.placement import TTL_S

log = logging.getLogger(__name__)

MOVED_FROM = "moved_from"
PAGE = 200
MIN_GRACE_S = 2 * TTL_S
"""the shortest grace a move takes: every process follows a swap within ``TTL_S`` (placement and
encoder lookups are cached that long), and a write it resolved just before may still be on its way"""


@dataclass
class PassCounts:
    """What one pass did."""

    seen: int = 0
    written: int = 0
    encoded: int = 0
    skipped: int = 0
    """``B`` already held that version or a newer one"""
    deleted: int = 0
    repaired: int = 0


@dataclass
class MoveReport:
    source: str
    target: str
    encoder: str
    passes: dict[str, PassCounts] = field(default_factory=dict)
    resumed: bool = False


@dataclass(frozen=True)
class Scope:
    """The documents of the source a move carries: ``query`` (every document by default), on the
    shard of ``routing`` where they are all routed alike (one tenant's)."""

    query: dict[str, Any] = field(default_factory=lambda: {"match_all": {}})
    routing: str | None = None

    def params(self) -> dict[str, Any]:
        return {"routing": self.routing} if self.routing is not None else {}


Progress = Callable[[str, int, int], None]
"""(phase, documents seen in this pass, documents in the source)"""


def next_index(settings: Settings, current: str) -> str:
    """``<prefix>-memories-v<n+1>`` after ``current`` (``…-v<n>``)."""
    base = IndexNames.of(settings).memories_index.rsplit("-v", 1)[0]
    try:
        n = int(current.rsplit("-v", 1)[1])
    except (IndexError, ValueError):
        raise SetupError(f"memories index {current} has no version suffix (-v<n>)") from None
    return f"{base}-v{n + 1}"


class Move:
    """The machinery of a move: its phases, state and passes. A kind of move says where it goes
    (``locate``: the source and target, the target made when new), what the swap changes
    (``swap``) and what the purge removes (``purge``). ``embedder``: the target encoder's passage
    side, which re-encodes every memory; None copies the vectors as they are. ``grace_s``: how
    long after the swap writers may still land in the source (they resolve where to write at
    most every 2 s)."""

    lease_key = SHARED
    """the move's key in the lease (``store/move_lease.py``)"""

    def __init__(
        self,
        client: OpenSearch,
        settings: Settings,
        embedder: Embedder | None,
        scope: Scope,
        *,
        grace_s: float = 10.0,
        progress: Progress | None = None,
    ) -> None:
        if grace_s < MIN_GRACE_S:
            raise SetupError(
                f"--grace-s {grace_s:g} is shorter than the {MIN_GRACE_S:g} s every process may take to follow "
                "the swap: writes made meanwhile would land in the old index after its last pass"
            )
        self.client, self.settings, self.embedder, self.scope = client, settings, embedder, scope
        self.grace_s = grace_s
        self.progress = progress or (lambda phase, seen, total: None)
        self.lease: MoveLease | None = None

    # -- what a kind of move says ------------------------------------------------------------------
    def locate(self) -> tuple[str, str, bool]:
        """(source, target, resumed): the move begun and not done, or a new one (its target made)."""
        raise NotImplementedError

    def swap(self, source: str, target: str) -> None:
        raise NotImplementedError

    def purge(self, source: str, target: str) -> PassCounts:
        """After the final passes: remove what the move leaves in ``source`` (nothing by default)."""
        return PassCounts()

    def encoder_name(self, target: str) -> str:
        return str((self._meta(target).get("encoder") or {}).get("name", ""))

    # -- state -----------------------------------------------------------------------------------
    def _meta(self, index: str) -> dict[str, Any]:
        mapping = self.client.indices.get_mapping(index=index)
        return dict(next(iter(mapping.values()))["mappings"].get("_meta") or {})

    def _state(self, target: str) -> dict[str, Any]:
        return dict(self._meta(target).get("move") or {})

    def _set_state(self, target: str, **update: Any) -> None:
        """Record the move's state, while this run holds the lease (a run that lost it never
        writes over the state of the run that took over)."""
        self._hold()
        meta = self._meta(target)
        meta["move"] = {**(meta.get("move") or {}), **update}
        self.client.indices.put_mapping(index=target, body={"_meta": meta})

    def _moved_from(self, index: str) -> str | None:
        return str(self._state(index).get("from") or "") or None

    def _create(self, target: str, body: dict[str, Any], source: str, **state: Any) -> None:
        """Create ``target`` from ``body`` with the move's state in its ``_meta``."""
        if self.client.indices.exists(index=target):
            raise SetupError(
                f"{target} exists and is no move from {source}: delete it, or move the alias by hand "
                "(docs/operations.md)"
            )
        body["mappings"]["_meta"] = {
            **(body["mappings"].get("_meta") or {}),
            "move": {"from": source, "phase": "copy", "started_at": time.time(), **state},
        }
        self.client.indices.create(index=target, body=body, params={"wait_for_active_shards": "1"})

    # -- the move --------------------------------------------------------------------------------
    def run(self) -> MoveReport:
        """Move (or resume the move) under its lease; returns what each pass did. MoveBusy while
        another run holds it or a conflicting move; LeaseLost when this run lost it midway."""
        names = IndexNames.of(self.settings)
        with MoveLease(self.client, names, self.lease_key, lease_s=self.settings.move_lease_s) as lease:
            self.lease = lease
            try:
                source, target, resumed = self.locate()
                report = MoveReport(source, target, self.encoder_name(target), resumed=resumed)
                while (phase := str(self._state(target).get("phase", "copy"))) != "done":
                    lease.hold()  # the phase just read is this run's to act on
                    self._step(phase, source, target, report)
            finally:
                self.lease = None
        return report

    def _hold(self) -> None:
        if self.lease is not None:
            self.lease.hold()

    def _step(self, phase: str, source: str, target: str, report: MoveReport) -> None:
        """Run ``phase`` and record the next one."""
        if phase in ("copy", "catch-up"):
            report.passes["copy"] = self._forward(source, target, "copy")
            self._set_state(target, phase="catch-up")
            report.passes["catch-up"] = self._forward(source, target, "catch-up")
            self.client.indices.refresh(index=target)
            self._hold()
            self.swap(source, target)
            self._set_state(target, phase="swapped", swapped_at=time.time())
        elif phase == "swapped":
            since = float(self._state(target).get("swapped_at", 0.0))
            wait = self.grace_s - (time.time() - since)
            if wait > 0:
                self.progress(f"grace ({wait:.0f} s)", 0, 0)
                time.sleep(wait)
            self._set_state(target, phase="final")
        elif phase == "final":
            report.passes["final"] = self._forward(source, target, "final")
            if self.embedder is not None:
                report.passes["clean-up"] = self._reencode_stale(source, target)
            self._set_state(target, phase="purge")
        elif phase == "purge":
            report.passes["purge"] = self.purge(source, target)
            self._set_state(target, phase="done", done_at=time.time())
        else:
            raise SetupError(f"{target}: the move's record holds an unknown phase {phase!r}")

    def _pages(self, index: str, label: str) -> Iterator[list[dict[str, Any]]]:
        """Every document of the scope in ``index`` (with its vector only where the move copies
        vectors), a page at a time, with its version, sequence number and routing; progress
        reported under ``label`` after each page."""
        params = self.scope.params()
        total = int(self.client.count(index=index, body={"query": self.scope.query}, params=params)["count"])
        body: dict[str, Any] = {"query": self.scope.query}
        if self.embedder is not None:
            body["_source"] = {"excludes": ["embedding"]}
        page: list[dict[str, Any]] = []
        seen = 0
        for hit in scan(
            self.client,
            index=index,
            query=body,
            size=PAGE,
            scroll="5m",
            version=True,
            seq_no_primary_term=True,
            **params,
        ):
            page.append(hit)
            if len(page) == PAGE:
                seen += len(page)
                yield page
                self.progress(label, seen, total)
                page = []
        if page:
            seen += len(page)
            yield page
        self.progress(label, seen, total)

    def _versions(self, index: str, hits: Sequence[dict[str, Any]]) -> dict[str, int]:
        docs = [{**_addressed(h), "_source": False} for h in hits]
        got = self.client.mget(index=index, body={"docs": docs})
        return {d["_id"]: int(d["_version"]) for d in got["docs"] if d.get("found")}

    def _forward(self, source: str, target: str, label: str) -> PassCounts:
        """Copy what ``target`` lacks or holds older from ``source`` (re-encoded where the move
        re-encodes)."""
        counts = PassCounts()
        for hits in self._pages(source, label):
            counts.seen += len(hits)
            self._copy(source, target, hits, counts)
        self.client.indices.refresh(index=target)
        return counts

    def _copy(self, source: str, target: str, hits: Sequence[dict[str, Any]], counts: PassCounts) -> None:
        """Write into ``target`` those of ``hits`` it lacks or holds at an older version. Once it
        returns, ``target`` holds each of ``hits`` at its version or a newer one."""
        have = self._versions(target, hits)
        todo = [h for h in hits if have.get(h["_id"], -1) < int(h["_version"])]
        counts.skipped += len(hits) - len(todo)
        if not todo:
            return
        encoded = self._encoded([h for h in todo if _has_vector(h["_source"])])
        counts.encoded += len(encoded)
        lines: list[str] = []
        for h in todo:
            doc = {**h["_source"], **encoded.get(h["_id"], {}), MOVED_FROM: source}
            action = {**_addressed(h), "version": int(h["_version"]), "version_type": "external_gte"}
            lines += [json.dumps({"index": action}), json.dumps(doc)]
        counts.written += self._bulk(target, lines)

    def _purge_copied(self, source: str, target: str, label: str) -> PassCounts:
        """Delete from ``source`` the scope's documents that ``target`` holds (a tenant move's
        purge): page by page, what ``target`` lacks or holds older is copied first, and each
        delete applies only if the document is unchanged since it was read (a write that lands
        meanwhile stays, for the next pass). Nothing is deleted that is not in ``target``."""
        counts = PassCounts()
        for hits in self._pages(source, label):
            self._hold()
            counts.seen += len(hits)
            self._copy(source, target, hits, counts)
            self.client.indices.refresh(index=target)
            lines = [json.dumps({"delete": _unchanged_since(h)}) for h in hits]
            r = self.client.bulk(index=source, body="\n".join(lines) + "\n", params={"request_timeout": 120})
            for item in r["items"]:
                status = int(item["delete"].get("status", 500))
                if status < 300:
                    counts.deleted += 1
                elif status not in (404, 409):
                    raise RuntimeError(f"purge of {source}: {item['delete'].get('error')}")
        self.client.indices.refresh(index=source)
        return counts

    def _encoded(self, hits: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """``_id`` → the vector fields the target encoder gives its memory (none without one)."""
        if self.embedder is None or not hits:
            return {}
        vectors = self.embedder.encode([h["_source"]["content"] for h in hits])
        name = self.embedder.name
        return {
            h["_id"]: {"embedding": [float(x) for x in vec], "embedding_model": name}
            for h, vec in zip(hits, vectors, strict=True)
        }

    def _reencode_stale(self, source: str, target: str) -> PassCounts:
        """In ``target``: re-encode what a writer still on the old encoder wrote after the swap.
        Nothing is deleted: a delete during the move is a tombstone the forward passes carried."""
        counts = PassCounts()
        name = self.embedder.name if self.embedder is not None else None
        for hits in self._pages(target, "clean-up"):
            counts.seen += len(hits)
            stale = [
                h
                for h in hits
                if name and _has_vector(h["_source"]) and h["_source"].get("embedding_model") not in (None, name)
            ]
            fresh = self._encoded(stale)
            lines: list[str] = []
            for h in stale:
                doc = {**h["_source"], **fresh[h["_id"]]}
                lines += [json.dumps({"index": _unchanged_since(h)}), json.dumps(doc)]
            counts.repaired += len(stale)
            if lines:
                self._bulk(target, lines)
        self.client.indices.refresh(index=target)
        return counts

    def _bulk(self, index: str, lines: list[str]) -> int:
        """Send ``lines``; a version conflict (the target holds a newer write) is the expected
        outcome of a race, any other failure raises."""
        r = self.client.bulk(index=index, body="\n".join(lines) + "\n", params={"request_timeout": 120})
        written = 0
        for item in r["items"]:
            (op,) = item.values()
            status = int(op.get("status", 500))
            if status < 300:
                written += 1
            elif status not in (404, 409):
                raise RuntimeError(f"move into {index}: {op.get('error')}")
        return written


def _addressed(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit's ``_id`` and, where it was routed, its routing: where a bulk or mget line finds it."""
    return {"_id": hit["_id"], **({"routing": hit["_routing"]} if hit.get("_routing") is not None else {})}


def _unchanged_since(hit: dict[str, Any]) -> dict[str, Any]:
    """A bulk action on the hit's document that applies only if nobody wrote it since it was read."""
    return {**_addressed(hit), "if_seq_no": hit["_seq_no"], "if_primary_term": hit["_primary_term"]}


def _has_vector(source: dict[str, Any]) -> bool:
    return bool(source.get("content")) and "tombstone_of" not in source
