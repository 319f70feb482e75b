"""The version every write and delete of a memory carries: it only grows.

A version is the acceptance time in microseconds since the epoch, made strictly increasing within
one process (two acceptances in the same microsecond get consecutive numbers). Memories are
written with OpenSearch's external versioning (``external_gte``): a write or tombstone lands only
if its version is at least the stored one, so an older task's retry or redelivery can never
overwrite a newer version of the same memory, and a delete wins over every write accepted before
it. Between API replicas the order is the order of their clocks (NTP keeps them within
milliseconds); within one replica it is the order of acceptance.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class VersionClock:
    def __init__(self, now_us: Callable[[], int] = lambda: time.time_ns() // 1000) -> None:
        self._now_us = now_us
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._last = max(self._last + 1, self._now_us())
            return self._last
