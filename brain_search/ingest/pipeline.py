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

import numpy as np
from opensearchpy import OpenSearch
from opensearchpy.exceptions import TransportError

from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.ingest.attempt import AttemptOutcome, vector_problem
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
from brain_search.ingest.leftovers import Leftovers
from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.ingest.retry_policy import backoff_delay
from brain_search.store.documents import build_memory_doc, memory_doc_id
from brain_search.store.following import for_tenant
from brain_search.store.placement import placement_for

log = logging.getLogger(__name__)


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
        self.leftovers = Leftovers(client, self.placement, self.write)

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
        job = self.leftovers.drop_deleted_chunks(job, out)
        job = self.leftovers.drop_fenced(job, out)
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
        self.leftovers.bury_deleted_chunks(job, out)
        self.leftovers.bury_fenced(job, out)
        self.leftovers.settle_documents(job, out)
        return out

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
