"""What an ingest attempt must not leave behind, looked for before and after it writes:

- writes a forget fenced off (``ingest/fences.py``): skipped before, buried after;
- the pieces of a chunked memory deleted while the job was queued: skipped before, buried after;
- a document's earlier pieces that this write of its memory id does not overwrite: tombstoned.

Every clean-up write goes through the pipeline's ``write`` (the same chunk, retry and backoff).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from opensearchpy import OpenSearch

from brain_search.ingest.attempt import AttemptOutcome, chunk_count, chunk_parent
from brain_search.ingest.bulk import BulkEntry, ItemOutcome
from brain_search.ingest.chunking import chunk_id
from brain_search.ingest.fences import FENCED, fenced, keys_of
from brain_search.ingest.models import IngestJob
from brain_search.ingest.tombstones import stored_versions, tombstone_entries, tombstoned
from brain_search.store.placement import Placement
from brain_search.store.scope import TenantScope

log = logging.getLogger(__name__)

FENCE_LOOKUP = 1000
"""fence ids read in one ``mget`` (ingest/fences.py)"""
MAX_PIECES = 100_000
"""the most pieces a document's earlier writes are looked for (far more than the settings allow)"""

Write = Callable[[str, Sequence[BulkEntry], bool], list[ItemOutcome]]
"""(tenant, entries, refresh) -> every entry's final outcome: ``IngestPipeline.write``"""


class Leftovers:
    """The clean-up of one pipeline's attempts; safe to share between threads."""

    def __init__(self, client: OpenSearch, placement: Placement, write: Write) -> None:
        self.client = client
        self.placement = placement
        self.write = write

    # ---------------------------------------------------------------- writes a forget fenced off
    # A forget accepted after the job leaves a fence over what it matches (ingest/fences.py): the
    # job looks before writing (skips what a fence covers) and after (buries what it wrote under
    # one), so a queued write of a new memory id never outlives a forget that covers it.
    def _fenced(self, job: IngestJob) -> dict[str, int]:
        """item id → the version of the newest fence over it that is newer than the job."""
        if job.version is None or not job.items:
            return {}
        by_owner: dict[tuple[str | None, ...], list[str]] = {}  # items alike share their fences
        for it in job.items:
            values = it.model_dump(include=set(FENCED))
            by_owner.setdefault((it.node_path, *(values.get(k) for k in FENCED)), []).append(it.memory_id)
        keys: dict[str, list[str]] = {}
        for (node_path, *owner), ids in by_owner.items():
            ks = keys_of(node_path, dict(zip(FENCED, owner, strict=True)))
            keys.update(dict.fromkeys(ids, ks))
        wanted = sorted({k for ks in keys.values() for k in ks})
        scope = TenantScope.of(self.placement, job.tenant_id)
        found: dict[str, int] = {}
        for start in range(0, len(wanted), FENCE_LOOKUP):  # a batch of many owners: several lookups
            found |= tombstoned(self.client, scope, wanted[start : start + FENCE_LOOKUP])
        return fenced(keys, found, job.version) if found else {}

    def drop_fenced(self, job: IngestJob, out: AttemptOutcome) -> IngestJob:
        gone = self._fenced(job)
        if not gone:
            return job
        out.superseded += [it.memory_id for it in job.items if it.memory_id in gone]
        return job.model_copy(update={"items": [it for it in job.items if it.memory_id not in gone]})

    def bury_fenced(self, job: IngestJob, out: AttemptOutcome) -> None:
        gone = {m: v for m, v in self._fenced(job).items() if m in set(out.indexed)} if out.indexed else {}
        for version in sorted(set(gone.values())):
            written = [m for m, v in gone.items() if v == version]
            outcomes = self.write(job.tenant_id, tombstone_entries(job.tenant_id, written, version), job.refresh)
            buried = {o.memory_id for o in outcomes if o.ok or o.superseded}
            out.indexed = [m for m in out.indexed if m not in buried]
            out.superseded += sorted(buried)

    # ---------------------------------------------------------------- chunks of a deleted memory
    # A chunked memory's pieces have their own ids, which a DELETE of the parent cannot know while
    # the job is queued. The DELETE tombstones the parent, then the pieces it finds stored; the job
    # checks the parent's tombstone before writing (skips the pieces) and after writing (buries
    # the pieces it just wrote). Either the DELETE's search sees the pieces or the job's check
    # sees the tombstone (tests/integration/test_durability.py).
    def _deleted_parents(self, job: IngestJob) -> dict[str, int]:
        if job.version is None:
            return {}
        parents = sorted({p for it in job.items if (p := chunk_parent(it))})
        found = tombstoned(self.client, TenantScope.of(self.placement, job.tenant_id), parents)
        return {p: v for p, v in found.items() if v > job.version}

    def drop_deleted_chunks(self, job: IngestJob, out: AttemptOutcome) -> IngestJob:
        deleted = self._deleted_parents(job)
        if not deleted:
            return job
        keep = [it for it in job.items if chunk_parent(it) not in deleted]
        out.superseded += [it.memory_id for it in job.items if chunk_parent(it) in deleted]
        return job.model_copy(update={"items": keep})

    def bury_deleted_chunks(self, job: IngestJob, out: AttemptOutcome) -> None:
        deleted = self._deleted_parents(job)
        if not deleted:
            return
        parent_of = {it.memory_id: chunk_parent(it) for it in job.items}
        for parent, version in deleted.items():
            written = [m for m in out.indexed if parent_of.get(m) == parent]
            entries = tombstone_entries(job.tenant_id, written, version)
            outcomes = self.write(job.tenant_id, entries, job.refresh)
            buried = {o.memory_id for o in outcomes if o.ok or o.superseded}
            out.indexed = [m for m in out.indexed if m not in buried]
            out.superseded += sorted(buried)

    # ---------------------------------------------------------------- a document's earlier pieces
    # A memory id names one document: the memory itself, or its pieces ``<id>#0`` .. ``<id>#<n-1>``
    # (``chunk: true``). A write of it replaces the whole document, so what an earlier write of
    # that id left and this one does not overwrite goes: the pieces past this write's count, the
    # whole memory when this write is chunked, every piece when it is not. They are tombstoned
    # with this job's version (a queued older write of them is then superseded too; a newer one
    # is never touched). Both writes check after writing (real-time ``mget``), so of two racing
    # writes of the same id the older one's leftovers go whichever lands last.
    def settle_documents(self, job: IngestJob, out: AttemptOutcome) -> None:
        if job.version is None or not out.indexed:
            return
        version = job.version
        written = set(out.indexed)
        parent_of = {it.memory_id: chunk_parent(it) or it.memory_id for it in job.items}
        counts: dict[str, int] = {}  # parent id → pieces this job writes (0: the whole memory)
        for it in job.items:
            if it.memory_id in written:
                counts[parent_of[it.memory_id]] = chunk_count(it)
        lost = {parent_of[m] for m in out.superseded if m in parent_of}  # a newer write holds a piece of ours
        mine: dict[str, list[str]] = {}
        for m in out.indexed:
            mine.setdefault(parent_of[m], []).append(m)
        tenant = job.tenant_id
        wholes = stored_versions(
            self.client, TenantScope.of(self.placement, tenant), [p for p, n in counts.items() if n]
        )
        stale: list[str] = []
        bury: set[str] = {p for p in lost if counts.get(p)}
        for parent, (live, v) in wholes.items():
            if live and v > version:
                bury.add(parent)  # a newer whole memory: our pieces are the leftovers
            elif live:
                stale.append(parent)
        for parent, found in self._pieces_from(tenant, {p: n for p, n in counts.items() if p not in bury}).items():
            newer = [k for k, (live, v) in found.items() if live and v > version]
            if counts[parent] == 0 and newer:
                bury.add(parent)  # a newer chunked write: our whole memory is the leftover
                continue
            stale += [chunk_id(parent, k) for k, (live, v) in sorted(found.items()) if live and v <= version]
        ours = [m for p in bury for m in mine.get(p, [])]
        outcomes = (
            self.write(tenant, tombstone_entries(tenant, stale + ours, version), job.refresh) if stale or ours else []
        )
        failed = [o for o in outcomes if not (o.ok or o.superseded)]
        if failed:
            log.error("task %s: %d earlier pieces not removed: %s", job.task_id, len(failed), failed[0].reason)
        buried = {o.memory_id for o in outcomes if o.ok or o.superseded} & set(ours)
        out.indexed = [m for m in out.indexed if m not in buried]
        out.superseded += sorted(buried)

    def _pieces_from(self, tenant_id: str, starts: dict[str, int]) -> dict[str, dict[int, tuple[bool, int]]]:
        """parent → {n: (live, version)} of its stored pieces (memories or tombstones) from piece
        ``starts[parent]`` on, up to the first id with no document: one ``mget`` of one id per
        parent when there is none (the usual case), larger windows while pieces are found."""
        found: dict[str, dict[int, tuple[bool, int]]] = {}
        todo, window = dict(starts), 1
        while todo:
            ids = {chunk_id(p, k): (p, k) for p, s in todo.items() for k in range(s, s + window)}
            got = stored_versions(self.client, TenantScope.of(self.placement, tenant_id), list(ids))
            more = {}
            for p, s in todo.items():
                for k in range(s, s + window):
                    hit = got.get(chunk_id(p, k))
                    if hit is None:
                        break
                    found.setdefault(p, {})[k] = hit
                else:
                    if s + window < MAX_PIECES:
                        more[p] = s + window
            todo, window = more, min(window * 8, 512)
        return found
