"""Per-key rate limits: a token bucket per API key, shared by every API replica through Redis.

Each key holds up to ``burst`` requests and refills at ``requests_per_s``; a request that finds
the bucket empty is a 429 with ``Retry-After`` (the seconds until one token is back). The limits
are the settings' (``BRAIN_RATE_LIMIT_PER_S``, ``BRAIN_RATE_LIMIT_BURST``; 0 turns them off) or
the tenant's own (``PUT /v1/admin/tenants/{id}/rate-limit``).

In worker mode the buckets live in Redis (one Lua script: read, refill by Redis's own clock, take,
write, all atomic), so two API replicas share one budget per key. In embedded mode, and while
Redis does not answer within ``REDIS_TIMEOUT_S`` (then it is left alone for ``BREAKER_S``), the
buckets are this process's own: a limiter outage never takes the API down, it only loosens the
limit to one budget per replica.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from brain_search.config import Settings
from brain_search.errors import RateLimited
from brain_search.lru import ByteLRU
from brain_search.store.cache_budget import cache_budgets

log = logging.getLogger(__name__)

REDIS_TIMEOUT_S = 0.25
BREAKER_S = 10.0

# KEYS[1] the bucket; ARGV rate (tokens/s), burst. Returns the seconds to wait (0: taken).
_TAKE = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(b[1]) or burst
local ts = tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)
"""


@dataclass(frozen=True)
class Limit:
    requests_per_s: float
    burst: int

    @property
    def off(self) -> bool:
        return self.requests_per_s <= 0 or self.burst <= 0


def take(tokens: float, last: float, now: float, limit: Limit) -> tuple[float, float]:
    """One request against a bucket that held ``tokens`` at ``last``: (tokens left, seconds to
    wait; 0 when the request may go) (pure)."""
    tokens = min(float(limit.burst), tokens + max(0.0, now - last) * limit.requests_per_s)
    if tokens >= 1.0:
        return tokens - 1.0, 0.0
    return tokens, (1.0 - tokens) / limit.requests_per_s


class LocalBuckets:
    """This process's buckets (thread-safe): the bucket's name (``<prefix>:ratelimit:<key hash>``)
    → its tokens and when they were counted, about 0.5 KB a bucket, bounded by ``max_bytes`` (the
    ``buckets`` share of ``cache_mib``), the least recently used out first. A bucket that went is
    full again when its key comes back (no engine round trip: the buckets are this process's)."""

    def __init__(self, max_bytes: int) -> None:
        self._buckets: ByteLRU[str, tuple[float, float]] = ByteLRU(max_bytes)
        self._lock = threading.Lock()

    def wait_s(self, bucket: str, limit: Limit, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.get(bucket) or (float(limit.burst), now)
            tokens, wait = take(tokens, last, now, limit)
            self._buckets.put(bucket, (tokens, now))
        return wait


class RateLimiter:
    def __init__(self, settings: Settings) -> None:
        self.default = Limit(settings.rate_limit_per_s, settings.rate_limit_burst)
        self.prefix = f"{settings.index_prefix}:ratelimit"
        self.local = LocalBuckets(cache_budgets(settings).buckets)
        self.redis_url = settings.redis_url
        self._redis: Any = None
        self._script: Any = None
        self._skip_redis_until = 0.0

    async def check(self, key_hash: str, limit: Limit | None = None) -> None:
        """Take one request from the key's bucket; ``RateLimited`` when it is empty."""
        limit = limit or self.default
        if limit.off:
            return
        bucket = key_hash[:32]
        wait = await self._redis_wait(bucket, limit)
        if wait is None:
            wait = self.local.wait_s(bucket, limit)
        if wait > 0:
            raise RateLimited(max(1, math.ceil(wait)))

    async def _redis_wait(self, bucket: str, limit: Limit) -> float | None:
        if not self.redis_url or time.monotonic() < self._skip_redis_until:
            return None
        try:
            if self._script is None:
                import redis.asyncio as aioredis

                self._redis = aioredis.Redis.from_url(
                    self.redis_url, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S
                )
                self._script = self._redis.register_script(_TAKE)
            out = await self._script(keys=[f"{self.prefix}:{bucket}"], args=[limit.requests_per_s, limit.burst])
            return float(out)
        except Exception as exc:  # redis errors and timeouts: this process's buckets meanwhile
            log.warning("rate limits: Redis did not answer (%s); per-process buckets for %.0f s", exc, BREAKER_S)
            self._skip_redis_until = time.monotonic() + BREAKER_S
            return None

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
