"""Per-key rate limits on the real stack: a burst past a tenant's limit gets 429s with
Retry-After over HTTP and MCP, other tenants are untouched, and API replicas share one budget
through Redis."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from brain_search.errors import RateLimited
from brain_search.tenancy.ratelimit import Limit, RateLimiter
from tests.conftest import ADMIN_KEY

pytestmark = pytest.mark.integration

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def _recall(api: Any, headers: dict[str, str]) -> Any:
    return api.post("/v1/recall", json={"query": "anything at all", "limit": 1}, headers=headers)


def test_a_burst_past_the_tenants_limit_gets_429s(api, make_tenant, live_api) -> None:
    import httpx

    busy, calm = make_tenant("busy-co"), make_tenant("calm-co")
    r = api.put("/v1/admin/tenants/busy-co/rate-limit", json={"requests_per_s": 1, "burst": 5}, headers=ADMIN)
    assert r.status_code == 200 and r.json()["default"] is False, r.text
    codes, retry_after = [], []
    for _ in range(20):
        got = _recall(api, busy)
        codes.append(got.status_code)
        if got.status_code == 429:
            retry_after.append(int(got.headers["Retry-After"]))
            assert "rate limit" in got.json()["detail"]
    print(f"a burst of 20 recalls at 1/s, burst 5: {codes.count(200)} answered, {codes.count(429)} refused (429)")
    assert set(codes) == {200, 429} and codes.count(429) >= 10 and codes[:5] == [200] * 5
    assert all(s >= 1 for s in retry_after)
    # MCP over HTTP spends the same budget
    mcp = httpx.post(
        f"{live_api}/mcp/",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={**busy, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
        timeout=30,
    )
    assert mcp.status_code == 429 and int(mcp.headers["Retry-After"]) >= 1  # right after the burst: no token back yet
    assert all(_recall(api, calm).status_code == 200 for _ in range(20))  # another tenant: its own budget
    time.sleep(max(retry_after) + 0.2)
    assert _recall(api, busy).status_code == 200  # after Retry-After, a token is back
    assert b'brain_requests_refused_total{reason="rate_limited"}' in api.get("/metrics").content

    back = api.put("/v1/admin/tenants/busy-co/rate-limit", json={"requests_per_s": None, "burst": None}, headers=ADMIN)
    assert back.status_code == 200 and back.json()["default"] is True
    half = api.put("/v1/admin/tenants/busy-co/rate-limit", json={"requests_per_s": 5}, headers=ADMIN)
    assert half.status_code == 422 and "together" in half.text
    assert api.put("/v1/admin/tenants/nobody/rate-limit", json={}, headers=ADMIN).status_code == 404


def test_api_replicas_share_one_budget_through_redis(settings, redis_url) -> None:
    s = settings.model_copy(update={"redis_url": redis_url, "index_prefix": f"{settings.index_prefix}-rl"})
    replicas = [RateLimiter(s), RateLimiter(s)]
    limit = Limit(requests_per_s=0.01, burst=4)
    key = f"{time.time_ns():032d}"

    async def main() -> tuple[int, int]:
        allowed = refused = 0
        for i in range(10):
            try:
                await replicas[i % 2].check(key, limit)
                allowed += 1
            except RateLimited as exc:
                assert exc.retry_after_s >= 1
                refused += 1
        for r in replicas:
            await r.close()
        return allowed, refused

    assert anyio.run(main) == (4, 6)  # one bucket of 4 for both replicas, not 4 each
