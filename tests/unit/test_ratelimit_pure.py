"""The token bucket (pure)."""

from __future__ import annotations

from brain_search.tenancy.ratelimit import Limit, LocalBuckets, take


def test_a_bucket_holds_its_burst_then_refills_at_its_rate() -> None:
    limit = Limit(requests_per_s=2.0, burst=3)
    buckets = LocalBuckets(2**20)
    waits = [buckets.wait_s("k", limit, now=100.0) for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0] and waits[3] == 0.5 and waits[4] == 0.5
    assert buckets.wait_s("k", limit, now=100.5) == 0.0  # one token back after 1 / rate
    assert buckets.wait_s("other", limit, now=100.5) == 0.0  # keys do not share a bucket


def test_take_never_holds_more_than_the_burst() -> None:
    tokens, wait = take(0.0, 0.0, 1000.0, Limit(10.0, 5))
    assert (tokens, wait) == (4.0, 0.0)
    assert Limit(0, 5).off and Limit(5, 0).off and not Limit(1, 1).off
