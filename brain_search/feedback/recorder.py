"""Keeping what a recall returned, off the recall's path: ``record`` gives the response its
``recall_id`` and hands a small record (ids and numbers, no memory text) to a background thread,
which writes what has gathered every ``feedback_flush_s`` in one ``_bulk``. A recall never waits
for the engine on its account (``record`` costs tens of microseconds: docs/feedback.md).

A feedback request for a recall still waiting here writes it first (``flush_for``), so a rating
sent right after the recall to the same API process finds it. A record the engine does not take is
logged and counted, never retried forever; past ``feedback_max_pending`` waiting records (an
engine that does not answer) new ones are counted as dropped instead of growing the process."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from brain_search.feedback.records import new_recall_id, recall_record
from brain_search.models import RecallRequest, RecallResponse

log = logging.getLogger(__name__)
PURGE_EVERY_S = 3600.0

WriteFn = Callable[[list[tuple[str, dict[str, Any]]]], tuple[int, int]]
EventFn = Callable[[str, int], None]


class RecallRecorder:
    def __init__(
        self,
        write: WriteFn,
        flush_s: float,
        max_pending: int,
        purge: Callable[[], int] | None = None,
    ) -> None:
        self._write = write
        self._purge = purge
        self.flush_s = flush_s
        self.max_pending = max_pending
        self._pending: dict[str, tuple[str, dict[str, Any]]] = {}  # recall id → (tenant, record)
        self._lock = threading.Lock()  # guards _pending
        self._flush_lock = threading.Lock()  # one writer at a time: a flush ends with its records written
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._events: EventFn = lambda _event, _n: None

    def set_events(self, events: EventFn) -> None:
        """``events(outcome, n)``: recorded, failed or dropped records (the metrics)."""
        self._events = events

    def record(self, tenant_id: str, req: RecallRequest, resp: RecallResponse) -> RecallResponse:
        """Give ``resp`` a new ``recall_id`` and queue its record; returns ``resp``."""
        recall_id = new_recall_id()
        resp.recall_id = recall_id
        doc = recall_record(tenant_id, recall_id, req, resp, at=datetime.now(UTC))
        with self._lock:
            if len(self._pending) >= self.max_pending:
                dropped = True
            else:
                dropped = False
                self._pending[recall_id] = (tenant_id, doc)
        if dropped:
            self._events("dropped", 1)
            return resp
        self._start()
        return resp

    def pending(self, recall_id: str) -> bool:
        with self._lock:
            return recall_id in self._pending

    def flush_for(self, recall_id: str) -> None:
        """Write ``recall_id``'s record now if it is still waiting (a feedback request for it)."""
        if self.pending(recall_id):
            self.flush()

    def flush(self) -> None:
        """Write every waiting record; returns once they are written (or counted as failed)."""
        with self._flush_lock:
            with self._lock:
                batch, self._pending = self._pending, {}
            if not batch:
                return
            try:
                ok, failed = self._write(list(batch.values()))
            except Exception as exc:  # the engine did not answer: these records are lost, and counted
                log.warning("%d recall records not written: %s", len(batch), exc)
                ok, failed = 0, len(batch)
            self._events("recorded", ok)
            self._events("failed", failed)

    def _start(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="recall-recorder", daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        purged_at = 0.0
        while not self._stop.wait(self.flush_s):
            self.flush()
            if self._purge is not None and (now := time.monotonic()) - purged_at >= PURGE_EVERY_S:
                purged_at = now
                try:
                    self._purge()
                except Exception as exc:
                    log.warning("purging expired recall records failed: %s", exc)

    def close(self) -> None:
        """Write what waits and stop the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.flush()
