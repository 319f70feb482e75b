"""The version every write and delete of a memory carries: it only grows.

A version is the acceptance time in microseconds since the epoch, made strictly increasing within
one process (two acceptances in the same microsecond get consecutive numbers). Memories are
written with OpenSearch's external versioning (``external_gte``): a write or tombstone lands only
if its version is at least the stored one, so an older task's retry or redelivery can never
overwrite a newer version of the same memory, and a delete wins over every write accepted before
it. Between API replicas the order is the order of their clocks; within one replica it is the
order of acceptance.

Wall clocks drift, and a replica whose clock ran an hour ahead would stamp versions that no
delete from the others outranks for that hour (its writes undeletable). So the clock is bounded
by a reference all replicas share, the engine's own clock (``engine_now_us``): the offset is
measured at the first version and every ``check_s`` after, and a version is never more than
``max_skew_us`` (``BRAIN_VERSION_MAX_SKEW_S``) ahead of the reference's time, nor as far behind:
outside that window it is clamped to its edge, and each clamped version is counted
(``brain_versions_clamped_total{direction}``, with the measured skew in
``brain_version_clock_skew_seconds``). When the reference does not answer, the last measured
offset stays in use (none at all: the local clock alone, as before).

A step of the host clock (an NTP correction, a VM resumed) is seen at the next version: the wall
clock moved more than half the bound further than the monotonic clock since the last
measurement, so the offset is measured again at once rather than up to ``check_s`` later. And
the last version given is held to the same window: after a step forward that was already used,
the next version goes back to the window's edge instead of counting on from an hour ahead (the
one place where this process's versions do not grow: a version an hour ahead would make its
writes undeletable by every other replica for that hour).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def _wall_us() -> int:
    return time.time_ns() // 1000


class VersionClock:
    def __init__(
        self,
        now_us: Callable[[], int] = _wall_us,
        reference_us: Callable[[], int] | None = None,
        max_skew_us: int = 2_000_000,
        check_s: float = 30.0,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._now_us = now_us
        self._reference_us = reference_us
        self.max_skew_us = max_skew_us
        self.check_s = check_s
        self._monotonic = monotonic
        self._last = 0
        self._lock = threading.Lock()
        self._measuring = threading.Lock()
        self._offset_us: int | None = None  # reference minus this clock, last measured
        self._measured_at: float | None = None
        self._wall_at: int | None = None  # this clock when the offset was measured
        self.clamped: dict[str, int] = {"ahead": 0, "behind": 0}

    @property
    def skew_s(self) -> float | None:
        """How far this clock runs ahead of the reference (negative: behind), last measured."""
        return None if self._offset_us is None else -self._offset_us / 1e6

    def _measure(self) -> None:
        """Measure the offset to the reference (one thread at a time; the others go on with the
        last one), taking the middle of the round trip as the moment the reference read."""
        if self._reference_us is None or not self._measuring.acquire(blocking=self._measured_at is None):
            return
        try:
            due = self._measured_at is None or self._monotonic() - self._measured_at >= self.check_s
            if not due:
                return
            self._measured_at = self._monotonic()
            t0 = self._now_us()
            ref = self._reference_us()
            t1 = self._now_us()
            self._offset_us = ref - (t0 + t1) // 2
            self._wall_at = t1
            if abs(self._offset_us) > self.max_skew_us:
                log.warning(
                    "this clock is %.3f s off the engine's (bound %.3f s): versions are clamped",
                    -self._offset_us / 1e6,
                    self.max_skew_us / 1e6,
                )
        except Exception as exc:  # the engine down: the last offset stays, the next check tries again
            log.warning("the engine's clock was not read (%s); versions use the last offset", exc)
        finally:
            self._measuring.release()

    def _stepped(self, now: int) -> bool:
        """Whether this clock jumped since the last measurement (pure over the two clocks)."""
        if self._wall_at is None or self._measured_at is None:
            return False
        walked = now - self._wall_at
        elapsed = int((self._monotonic() - self._measured_at) * 1e6)
        return abs(walked - elapsed) > self.max_skew_us // 2

    def next(self) -> int:
        if self._reference_us is not None:
            if self._stepped(self._now_us()):
                self._measured_at = self._monotonic() - self.check_s  # due now
            if self._measured_at is None or self._monotonic() - self._measured_at >= self.check_s:
                self._measure()
        now = self._now_us()
        offset = self._offset_us
        with self._lock:
            if offset is not None:
                reference = now + offset
                if now > reference + self.max_skew_us:
                    now = reference + self.max_skew_us
                    self.clamped["ahead"] += 1
                elif now < reference - self.max_skew_us:
                    now = reference - self.max_skew_us
                    self.clamped["behind"] += 1
                if self._last + 1 > reference + self.max_skew_us:  # given ahead before a step was seen
                    self._last = reference + self.max_skew_us - 1
                    self.clamped["ahead"] += 1
            self._last = max(self._last + 1, now)
            return self._last


def engine_now_us(client: Any, index: str) -> int:
    """The engine's clock, in microseconds (millisecond resolution): the ``now`` of a search,
    as a ``date_range`` bucket on ``index``'s ``timestamp`` reads it (any index the caller may
    search; nothing is read from it, and ``now`` is never served from the request cache)."""
    body = {
        "size": 0,
        "query": {"match_none": {}},
        "aggs": {"now": {"date_range": {"field": "timestamp", "ranges": [{"from": "now"}]}}},
    }
    r = client.search(index=index, body=body, params={"request_cache": "false"})
    return int(r["aggregations"]["now"]["buckets"][0]["from"]) * 1000


def engine_version_clock(client: Any, index: str, max_skew_s: float) -> VersionClock:
    """The version clock of a process that accepts writes: bounded by the engine's clock."""
    return VersionClock(reference_us=lambda: engine_now_us(client, index), max_skew_us=int(max_skew_s * 1e6))
