"""When a call is tried again, and how long the client waits first (pure; the transports sleep).

- 429: always (the API refused the request before doing anything), after ``Retry-After`` (never
  sooner), up to ``max_retry_after`` seconds; a longer wait is not made: ``RateLimited`` is raised.
- 502, 503, 504 and a connection lost after the request was sent: only an idempotent request
  (reads, PUT, DELETE, a recall, a write whose memories all carry a ``memory_id``, a forget),
  which can run twice and leave the same state.
- A connection never made (refused, DNS, connect timeout): always, nothing was sent.
- Any other status: never.

The waits grow as ``backoff_base × 2^attempt``, capped at ``backoff_cap``, each with jitter (half
fixed, half random) so clients that failed together do not come back together.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

RETRIED_STATUSES = frozenset({502, 503, 504})
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds or an HTTP date; None otherwise."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries``: tries after the first; 0 turns retrying off."""

    max_retries: int = 4
    backoff_base: float = 0.25
    backoff_cap: float = 8.0
    max_retry_after: float = 60.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def backoff(self, attempt: int) -> float:
        """The wait before retry ``attempt`` (0 = the first retry): capped, half of it jittered."""
        ceiling = min(self.backoff_cap, self.backoff_base * (2**attempt))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)

    def after_status(self, status: int, attempt: int, *, idempotent: bool, retry_after: float | None) -> float | None:
        """Seconds to wait before trying again after an answer ``status``, or None: do not."""
        if attempt >= self.max_retries:
            return None
        if status == 429:
            floor = retry_after if retry_after is not None else self.backoff(attempt)
            if floor > self.max_retry_after:
                return None
            return floor + self.rng.uniform(0, self.backoff_base)
        if status in RETRIED_STATUSES and idempotent:
            return max(self.backoff(attempt), min(retry_after or 0.0, self.max_retry_after))
        return None

    def after_error(self, exc: Exception, attempt: int, *, idempotent: bool) -> float | None:
        """Seconds to wait before trying again after a transport error, or None: do not."""
        if attempt >= self.max_retries or not isinstance(exc, httpx.TransportError):
            return None
        if isinstance(exc, NEVER_SENT) or idempotent:
            return self.backoff(attempt)
        return None


NO_RETRIES = RetryPolicy(max_retries=0)
