"""The retry policy (pure): which answers are tried again, and how long the client waits."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
from brain_search_client.retry import RetryPolicy, parse_retry_after


def policy(**kw: object) -> RetryPolicy:
    return RetryPolicy(rng=random.Random(7), **kw)  # type: ignore[arg-type]


def test_a_429_waits_at_least_what_retry_after_says_also_for_a_write_that_is_not_idempotent() -> None:
    p = policy()
    for attempt in range(4):
        wait = p.after_status(429, attempt, idempotent=False, retry_after=2.0)
        assert wait is not None and 2.0 <= wait <= 2.0 + p.backoff_base
    assert p.after_status(429, 4, idempotent=True, retry_after=1.0) is None  # retries spent
    assert p.after_status(429, 0, idempotent=True, retry_after=600.0) is None  # longer than it waits: raised


def test_5xx_are_retried_for_idempotent_requests_only_and_other_4xx_never() -> None:
    p = policy()
    for status in (502, 503, 504):
        assert p.after_status(status, 0, idempotent=True, retry_after=None) is not None
        assert p.after_status(status, 0, idempotent=False, retry_after=None) is None
    for status in (400, 401, 403, 404, 409, 412, 415, 422, 500):
        assert p.after_status(status, 0, idempotent=True, retry_after=None) is None


def test_the_backoff_grows_is_capped_and_jittered() -> None:
    p = policy(backoff_base=0.5, backoff_cap=4.0)
    waits = [p.backoff(a) for a in range(8)]
    for attempt, wait in enumerate(waits):
        ceiling = min(4.0, 0.5 * 2**attempt)
        assert ceiling / 2 <= wait <= ceiling
    assert len({round(w, 6) for w in waits[4:]}) > 1  # capped, yet not all the same: jitter


def test_a_connection_never_made_is_retried_one_lost_after_sending_only_when_idempotent() -> None:
    p = policy()
    request = httpx.Request("POST", "http://x/v1/memories")
    assert p.after_error(httpx.ConnectError("refused", request=request), 0, idempotent=False) is not None
    assert p.after_error(httpx.ReadTimeout("slow", request=request), 0, idempotent=False) is None
    assert p.after_error(httpx.ReadTimeout("slow", request=request), 0, idempotent=True) is not None
    assert p.after_error(ValueError("not a transport error"), 0, idempotent=True) is None


def test_retry_after_is_read_as_seconds_or_as_a_date() -> None:
    now = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0 and parse_retry_after("0.5") == 0.5
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now=now) == 30.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None and parse_retry_after("-4") == 0.0
