"""The tenant list at scale (issue 67 item 5): ``n`` tenants created in bulk (1,000 a request, as
``POST /v1/admin/tenants/bulk`` does), then listed page by page with the cursor (``after``, as
``GET /v1/admin/tenants`` and ``X-Next-After`` do) until the last page, on the real engine, in its
own index prefix (removed at the end). It checks the list is whole: every id once, in order."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from brain_search.config import Settings
from brain_search.store.client import make_client
from brain_search.store.indices import install_all
from brain_search.store.templates import delete_indices
from brain_search.tenancy.auth import KeyStore

BULK = 1000


@dataclass
class TenantListReport:
    tenants: int
    create_s: float
    pages: int
    list_s: float
    listed: int
    whole: bool
    slowest_page_ms: float


def run_tenant_list(
    settings: Settings, n: int, page: int = 1000, log: Callable[[str], None] = print
) -> TenantListReport:
    client = make_client(settings)
    delete_indices(client, settings)
    install_all(client, settings)
    keys = KeyStore(client, settings)
    ids = [f"org-{i:07d}" for i in range(n)]
    try:
        t0 = time.perf_counter()
        for start in range(0, n, BULK):
            out = keys.create_tenants([(t, None) for t in ids[start : start + BULK]])
            assert len(out["created"]) == len(ids[start : start + BULK]), out
            if start and start % (20 * BULK) == 0:
                log(f"created {start:,} of {n:,}")
        create_s = time.perf_counter() - t0
        listed: list[str] = []
        after: str | None = None
        pages, slowest = 0, 0.0
        t1 = time.perf_counter()
        while True:
            ts = time.perf_counter()
            got = keys.list_tenants(page, after)
            slowest = max(slowest, (time.perf_counter() - ts) * 1000)
            pages += 1
            listed += [t["tenant_id"] for t in got]
            if len(got) < page:
                break
            after = got[-1]["tenant_id"]
        list_s = time.perf_counter() - t1
        return TenantListReport(n, create_s, pages, list_s, len(listed), listed == sorted(ids), slowest)
    finally:
        delete_indices(client, settings)
        client.close()
