"""One attempt of an ingest job: embed in batches, bulk-index in chunks, retry items.

Embedding and writing overlap: while one ``_bulk`` request is in flight (a writer thread), the
next batch is embedded. Items OpenSearch could not take for a transient reason (429, 5xx,
connection errors, timeouts: ``retry_policy.py``) are re-sent, alone, with capped exponential
backoff and jitter until ``ingest_retry_deadline_s``; what is still failing then is returned as
*pending* (the caller retries the task later). Other failures are *permanent* (mapping errors,
refusals such as a 403, bad vectors).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from opensearchpy import OpenSearch
from opensearchpy.exceptions import TransportError

from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.ingest.bulk import (
    BulkEntry,
    ItemOutcome,
    bulk_body,
    chunk_entries,
    encode_entry,
    index_action,
    outcomes_for_exception,
    parse_bulk_response,
)
from brain_search.ingest.chunking import chunk_id
from brain_search.ingest.fences import FENCED, fenced, keys_of
from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.ingest.retry_policy import backoff_delay
from brain_search.ingest.tombstones import stored_versions, tombstone_entries, tombstoned
from brain_search.store.documents import build_memory_doc, memory_doc_id
from brain_search.store.following import for_tenant
from brain_search.store.placement import placement_for
from brain_search.store.scope import TenantScope

log = logging.getLogger(__name__)


@dataclass
class AttemptOutcome:
    indexed: list[str] = field(default_factory=list)
    permanent: list[tuple[MemoryItem, ItemOutcome]] = field(default_factory=list)
    pending: list[tuple[MemoryItem, ItemOutcome]] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    deferred: list[MemoryItem] = field(default_factory=list)  # not started: the time budget ran out, or it yielded
    yielded: bool = False  # deferred because another job was waiting (lanes.py), not for the time budget


def chunk_parent(item: MemoryItem) -> str | None:
    parent = (item.metadata or {}).get("chunk_of")
    return parent if isinstance(parent, str) else None


FENCE_LOOKUP = 1000
"""fence ids read in one ``mget`` (ingest/fences.py)"""
MAX_PIECES = 100_000
"""the most pieces a document's earlier writes are looked for (far more than the settings allow)"""


def _chunk_count(item: MemoryItem) -> int:
    """How many pieces the document of a piece has (0: the item is a whole memory)."""
    if chunk_parent(item) is None:
        return 0
    n = (item.metadata or {}).get("chunk_count")
    return n if isinstance(n, int) and n > 0 else 1


def vector_problem(vec: np.ndarray, dimension: int) -> str | None:
    """Why a vector cannot be indexed (None when it can)."""
    if vec.shape != (dimension,):
        return f"vector has shape {vec.shape}, expected ({dimension},)"
    if not np.isfinite(vec).all():
        return "vector has NaN or infinite components"
    if not np.any(vec):
        return "vector is all zeros (cosine similarity is undefined)"
    return None


class IngestPipeline:
    """Embeds and indexes the items of a job; safe to share between threads."""

    def __init__(
        self,
        client: OpenSearch,
        embedder: Embedder,
        settings: Settings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.client = client
        self.embedder = embedder
        self.settings = settings
        self.placement = placement_for(client, settings)
        self.sleep = sleep
        self.clock = clock
        self.rng = rng

    # ---------------------------------------------------------------- documents
    def _entries(
        self, tenant_id: str, items: Sequence[MemoryItem], out: AttemptOutcome, version: int | None
    ) -> list[BulkEntry]:
        embedder = for_tenant(self.embedder, tenant_id)  # the encoder its index records
        vectors = embedder.encode([it.content for it in items])
        entries = []
        for i, item in enumerate(items):
            vec = np.asarray(vectors[i], dtype=np.float32) if i < len(vectors) else np.zeros(0, np.float32)
            problem = vector_problem(vec, self.settings.embedding_dimension)
            if problem:
                failure = ItemOutcome(item.memory_id, False, error_type="bad_vector", reason=problem)
                out.permanent.append((item, failure))
                continue
            doc = build_memory_doc(
                tenant_id=tenant_id, embedding=(), embedding_model=embedder.name, **item.memory_fields()
            )
            doc["embedding"] = vec  # numpy, encoded by orjson (avoids a Python float per component)
            doc_id = memory_doc_id(tenant_id, item.memory_id)
            action = index_action(doc_id, tenant_id, version)
            if item.if_version is not None:  # an edit: compare-and-set on its claim (IngestService._requeue)
                # the version, not the sequence number: a move copies a memory with its version, so
                # the claim still holds in the index the memory lives in after a swap
                action = {
                    "index": {
                        "_id": doc_id,
                        "routing": tenant_id,
                        "version": item.if_version + 1,
                        "version_type": "external",
                    }
                }
            elif item.if_seq_no is not None:  # queued by an API before if_version
                action = {"index": {"_id": doc_id, "routing": tenant_id, "if_seq_no": item.if_seq_no}}
                action["index"]["if_primary_term"] = item.if_primary_term
            entries.append(encode_entry(item.memory_id, action, doc))
        return entries

    # ---------------------------------------------------------------- writing
    def _send(self, tenant_id: str, entries: Sequence[BulkEntry], refresh: bool) -> list[ItemOutcome]:
        params = {"refresh": "wait_for"} if refresh else {}
        index = self.placement.index(tenant_id)  # looked up per send: a retry follows a tenant's move
        try:
            response = self.client.bulk(body=bulk_body(entries), index=index, params=params)
        except TransportError as exc:  # includes connection errors and timeouts
            return outcomes_for_exception(entries, exc)
        return parse_bulk_response(response, entries)

    def write(self, tenant_id: str, entries: Sequence[BulkEntry], refresh: bool) -> list[ItemOutcome]:
        """Send one chunk; re-send the retriable items with backoff until the deadline.
        Returns the final outcome of every entry (a still-retriable failure is pending)."""
        deadline = self.clock() + self.settings.ingest_retry_deadline_s
        final: dict[str, ItemOutcome] = {}
        todo = list(entries)
        attempt = 0
        while todo:
            outcomes = self._send(tenant_id, todo, refresh)
            retry_ids = set()
            for o in outcomes:
                if o.ok or not o.retriable:
                    final[o.memory_id] = o
                else:
                    retry_ids.add(o.memory_id)
                    final[o.memory_id] = o  # replaced if a later try succeeds
            if not retry_ids:
                break
            s = self.settings
            delay = backoff_delay(attempt, s.ingest_retry_base_s, s.ingest_retry_cap_s, self.rng())
            if self.clock() + delay > deadline:
                break
            log.info("bulk: %d of %d items retriable, again in %.1fs", len(retry_ids), len(todo), delay)
            self.sleep(delay)
            attempt += 1
            todo = [e for e in todo if e.memory_id in retry_ids]
        return [final[e.memory_id] for e in entries]

    # ---------------------------------------------------------------- one attempt
    def run(
        self,
        job: IngestJob,
        deadline: float | None = None,
        *,
        step: int | None = None,
        yield_now: Callable[[], bool] | None = None,
    ) -> AttemptOutcome:
        """``deadline`` (on this pipeline's clock): no new batch starts past it; the items not
        started come back as ``deferred`` for the next attempt, so a job larger than one task's
        time limit is split over attempts instead of being killed. ``yield_now``: asked before
        each batch of ``step`` memories (a slice, ``lanes.py``) after the first; True stops the
        attempt there too (another job is waiting), its items ``deferred`` and ``yielded``."""
        out = AttemptOutcome()
        job = self._drop_deleted_chunks(job, out)
        job = self._drop_fenced(job, out)
        by_id = {it.memory_id: it for it in job.items}
        s = self.settings
        in_flight: Future[list[ItemOutcome]] | None = None

        def collect(future: Future[list[ItemOutcome]] | None) -> None:
            for o in future.result() if future else []:
                if o.ok:
                    out.indexed.append(o.memory_id)
                elif o.superseded:
                    out.superseded.append(o.memory_id)
                elif o.retriable:
                    out.pending.append((by_id[o.memory_id], o))
                else:
                    out.permanent.append((by_id[o.memory_id], o))

        # a job that may yield embeds and writes in slices, so that it stops within one slice
        every = max(1, s.embedding_batch_size, s.bulk_max_docs) if step is None else max(1, step)
        max_docs = s.bulk_max_docs if step is None else min(s.bulk_max_docs, every)
        entries = self._all_entries(job, out, deadline, every, yield_now=yield_now)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bulk") as writer:
            # embedding is lazy: the next chunk is embedded while the previous one is being written
            for chunk in chunk_entries(entries, max_docs, s.bulk_max_bytes):
                collect(in_flight)  # at most one request in flight: back-pressure on embedding
                in_flight = writer.submit(self.write, job.tenant_id, chunk, job.refresh)
            collect(in_flight)
        self._bury_deleted_chunks(job, out)
        self._bury_fenced(job, out)
        self._settle_documents(job, out)
        return out

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

    def _drop_fenced(self, job: IngestJob, out: AttemptOutcome) -> IngestJob:
        gone = self._fenced(job)
        if not gone:
            return job
        out.superseded += [it.memory_id for it in job.items if it.memory_id in gone]
        return job.model_copy(update={"items": [it for it in job.items if it.memory_id not in gone]})

    def _bury_fenced(self, job: IngestJob, out: AttemptOutcome) -> None:
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

    def _drop_deleted_chunks(self, job: IngestJob, out: AttemptOutcome) -> IngestJob:
        deleted = self._deleted_parents(job)
        if not deleted:
            return job
        keep = [it for it in job.items if chunk_parent(it) not in deleted]
        out.superseded += [it.memory_id for it in job.items if chunk_parent(it) in deleted]
        return job.model_copy(update={"items": keep})

    def _bury_deleted_chunks(self, job: IngestJob, out: AttemptOutcome) -> None:
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
    def _settle_documents(self, job: IngestJob, out: AttemptOutcome) -> None:
        if job.version is None or not out.indexed:
            return
        version = job.version
        written = set(out.indexed)
        parent_of = {it.memory_id: chunk_parent(it) or it.memory_id for it in job.items}
        counts: dict[str, int] = {}  # parent id → pieces this job writes (0: the whole memory)
        for it in job.items:
            if it.memory_id in written:
                counts[parent_of[it.memory_id]] = _chunk_count(it)
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

    def _all_entries(
        self,
        job: IngestJob,
        out: AttemptOutcome,
        deadline: float | None,
        step: int,
        *,
        yield_now: Callable[[], bool] | None,
    ) -> Iterator[BulkEntry]:
        """The job's entries, embedded a window at a time: the model sorts a call's texts by length
        and batches them (embedding_batch_size), so larger calls waste less padding than one call
        per batch. A window larger than ``step`` is sorted by length here and embedded in calls of
        ``step``, checking the deadline and ``yield_now`` between two (a job's memories are
        distinct ids, so their order is free): about the CPU of one call per window (LoCoMo turns:
        calls of 64 unsorted cost a third more CPU than calls of 512, sorted ones 0–5 % more)."""
        items = job.items
        window = max(1, self.settings.embedding_batch_size, self.settings.bulk_max_docs, step)
        for at in range(0, len(items), window):
            block = list(items[at : at + window])
            if step < len(block):
                block.sort(key=lambda it: len(it.content))
            for start in range(0, len(block), step):
                if at or start:
                    if deadline is not None and self.clock() >= deadline:
                        out.deferred = block[start:] + list(items[at + window :])
                        return
                    if yield_now is not None and yield_now():
                        out.deferred, out.yielded = block[start:] + list(items[at + window :]), True
                        return
                yield from self._entries(job.tenant_id, block[start : start + step], out, job.version)
