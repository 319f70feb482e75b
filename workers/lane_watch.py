"""What a running job asks between two slices (``brain_search/ingest/lanes.py``): how many
messages wait in each lane, two ``LLEN`` on one round trip to Redis."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis

from brain_search.config import Settings
from brain_search.ingest.broker import queue_keys
from brain_search.ingest.lanes import should_yield

log = logging.getLogger(__name__)


class LaneWatch:
    """The lanes' depths for one worker process. Short socket timeouts, and after a Redis error it
    answers "nobody waits" for ``BREAKER_S``: a job then runs on as it did before the lanes, and
    never stalls on a hung Redis (the message itself is Celery's to redeliver)."""

    TIMEOUT_S = 0.5
    BREAKER_S = 10.0

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        if not settings.redis_url:
            raise RuntimeError("workers need BRAIN_REDIS_URL")
        self.settings = settings
        self.keys = queue_keys(settings)
        self.clock = clock
        self._redis = redis.Redis.from_url(
            settings.redis_url, socket_connect_timeout=self.TIMEOUT_S, socket_timeout=self.TIMEOUT_S
        )
        self._quiet_until = 0.0

    def waiting(self) -> tuple[int, int]:
        """(messages in the fast lane, in the bulk lane); (0, 0) while Redis does not answer."""
        if self.clock() < self._quiet_until:
            return 0, 0
        try:
            pipe = self._redis.pipeline(transaction=False)
            for key in self.keys:
                pipe.llen(key)
            fast, bulk = pipe.execute()
            return int(fast), int(bulk)
        except redis.RedisError as exc:
            log.warning("the lanes' depths were not read (%s): jobs run on for %.0f s", exc, self.BREAKER_S)
            self._quiet_until = self.clock() + self.BREAKER_S
            return 0, 0

    def yield_now(self, started: float) -> Callable[[], bool]:
        """Whether a job started at ``started`` (this watch's clock) stops at its slice's end."""
        return lambda: should_yield(*self.waiting(), self.clock() - started, self.settings)
