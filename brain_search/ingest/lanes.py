"""Fair ingest: which lane a job waits in, and how much of a job one message runs.

The problem (issue 67): the ingest queue was one FIFO for everyone, so one organisation's import
held every other organisation's single write behind all of it (about 6 s behind a 200-memory
batch, minutes behind 10,000).

The choice: **small first, large jobs yield between slices.** Two lanes, each a queue:

- the **fast lane** (``<prefix>-ingest``) takes a job of at most ``ingest_fast_lane_max`` memories
  (a single write, the few memories of a conversation turn), while its tenant has fast-lane
  allowance left (below);
- the **bulk lane** (``<prefix>-ingest-bulk``) takes every other job.

Workers take the fast lane first (kombu's ``priority`` order over ``lane_queues``); embedded
mode's threads do the same (``LaneScheduler``). A job embeds and writes in **slices**
(``slice_size``: ``ingest_slice_memories`` memories, fewer when they are long) and, between two,
looks at the lanes (``should_yield``: two ``LLEN``, a fraction of a millisecond): when a job waits
in the fast lane, or one waits in the bulk lane and this one has run ``ingest_turn_s``, it stops
there and the rest of it goes to the back of the bulk lane, as the continuation a job larger than
the task time limit already had (same task id and record, signed, deliveries counted per step).
So a single write waits for the slice in flight on each worker, never for another tenant's whole
batch; the large jobs of several tenants take turns of ``ingest_turn_s``; and a job nobody waits
behind runs on in one message at the throughput it had (slicing every job unconditionally cost
a fifth of a worker's throughput in one run, 100 against 128 memories/s: a record update, a
message, the fence and piece look-ups and an unshared bulk request per slice; lab/reports/history/lab-2026-12.md,
"Fair ingest").

Fast-lane allowance: a tenant that sends its import as thousands of single writes is a large batch
too. Each API process lets a tenant put ``ingest_fast_lane_per_s`` memories a second on the fast
lane; past that its jobs go to the bulk lane for the rest of the second. An idle bulk lane costs
them nothing; a busy one is shared with the other tenants' large jobs.

Why not the alternatives:

- a queue per tenant: Celery workers consume a fixed list of queues, and a scheduler of our own
  over 100k per-tenant lists would replace what the fault table rests on (``acks_late``,
  redelivery after the visibility timeout, the reconciler reading the queue keys);
- Redis message priorities (kombu ``priority_steps``) order messages but do not split a job: a
  single write still waits for the whole 1,000-memory task in flight;
- splitting a batch into many tasks at the API: the task id a POST answers is what its client
  polls, and a task per slice would change that contract and multiply the records.

What stays as the code documents it: a task's record is written before its first message and
keeps the whole job's sealed payload until the job ends (the reconciler re-queues a job whose
message vanished, from its start: writes are idempotent); every message is signed; a killed
message is redelivered (``acks_late``); every write of a job carries the job's acceptance version,
so running jobs out of arrival order never lets an older write win over a newer write or a delete
(``versions.py``, tombstones and fences).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Generic, TypeVar

from brain_search.config import Settings
from brain_search.ingest.models import IngestJob, MemoryItem

T = TypeVar("T")


class Lane(StrEnum):
    fast = "fast"
    bulk = "bulk"


def slice_size(items: Sequence[MemoryItem], settings: Settings) -> int:
    """How many of ``items`` one message runs (pure): at most ``ingest_slice_memories``, and no
    more than fit ``ingest_slice_memories`` short memories' worth of text (each counted as at most
    ``ingest_chunk_chars`` characters, about what the model reads of one), never fewer than one."""
    most = max(1, settings.ingest_slice_memories)
    budget = most * SHORT_MEMORY_CHARS
    used = 0
    for n, item in enumerate(items[:most]):
        used += max(1, min(len(item.content), settings.ingest_chunk_chars))
        if used > budget and n:
            return n
    return min(len(items), most)


SHORT_MEMORY_CHARS = 200
"""the text of a typical memory (a turn of a conversation), what a slice is sized in"""


def lane_for(size: int, used: int, settings: Settings) -> Lane:
    """The lane of a new job of ``size`` memories whose tenant has put ``used`` memories on the
    fast lane in the current second (pure)."""
    if size <= settings.ingest_fast_lane_max and used + size <= settings.ingest_fast_lane_per_s:
        return Lane.fast
    return Lane.bulk


def should_yield(fast_waiting: int, bulk_waiting: int, ran_s: float, settings: Settings) -> bool:
    """Whether a job that has run ``ran_s`` seconds stops at this slice's end for the jobs waiting
    in the lanes (pure): for any in the fast lane, for one in the bulk lane after its turn."""
    return fast_waiting > 0 or (bulk_waiting > 0 and ran_s >= settings.ingest_turn_s)


def lane_of(job: IngestJob, settings: Settings) -> Lane:
    """The lane of a job queued again by size alone (the reconciler, a re-published job)."""
    return lane_for(len(job.items), 0, settings)


class LanePicker:
    """Which lane a new job waits in (``lane_for``), with each tenant's fast-lane use in the
    current one-second window.

    Holds one int per tenant that wrote in the current window, and drops them all when the window
    turns: its size is the number of tenants that wrote within one second (a few hundred bytes
    each), whatever the number of tenants."""

    WINDOW_S = 1.0

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self._window = clock()
        self._used: dict[str, int] = {}
        self._lock = threading.Lock()

    def pick(self, job: IngestJob) -> Lane:
        size = len(job.items)
        with self._lock:
            now = self.clock()
            if now - self._window >= self.WINDOW_S:
                self._window, self._used = now, {}
            lane = lane_for(size, self._used.get(job.tenant_id, 0), self.settings)
            if lane is Lane.fast:
                self._used[job.tenant_id] = self._used.get(job.tenant_id, 0) + size
            return lane

    def __len__(self) -> int:
        return len(self._used)


class LaneScheduler(Generic[T]):
    """Embedded mode's two lanes in memory: ``take`` answers the fast lane's oldest entry, else the
    bulk lane's, else waits; an entry put with a delay (a retry's countdown) joins its lane when
    due. Holds the entries waiting (the jobs themselves), nothing per tenant."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lanes: dict[Lane, deque[T]] = {Lane.fast: deque(), Lane.bulk: deque()}
        self._delayed: list[tuple[float, int, Lane, T]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._closed = False

    def put(self, item: T, lane: Lane, delay_s: float = 0.0) -> None:
        with self._cond:
            if delay_s > 0:
                heapq.heappush(self._delayed, (self.clock() + delay_s, next(self._order), lane, item))
            else:
                self._lanes[lane].append(item)
            self._cond.notify()

    def _due(self) -> float | None:
        """Move the delayed entries that are due into their lanes; seconds until the next one."""
        now = self.clock()
        while self._delayed and self._delayed[0][0] <= now:
            _, _, lane, item = heapq.heappop(self._delayed)
            self._lanes[lane].append(item)
        return self._delayed[0][0] - now if self._delayed else None

    def take(self, timeout_s: float | None = None) -> T | None:
        """The next entry (fast lane first); None once closed, or after ``timeout_s`` with none."""
        end = None if timeout_s is None else self.clock() + timeout_s
        with self._cond:
            while not self._closed:
                next_due = self._due()
                for lane in (Lane.fast, Lane.bulk):
                    if self._lanes[lane]:
                        return self._lanes[lane].popleft()
                left = None if end is None else end - self.clock()
                if left is not None and left <= 0:
                    return None
                waits = [w for w in (next_due, left) if w is not None]
                self._cond.wait(min(waits) if waits else None)
            return None

    def waiting(self, lane: Lane | None = None) -> int:
        """Entries waiting in ``lane`` (due ones), or in all, delayed ones included."""
        with self._cond:
            if lane is not None:
                self._due()
                return len(self._lanes[lane])
            return sum(len(q) for q in self._lanes.values()) + len(self._delayed)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
