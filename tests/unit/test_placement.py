"""store/placement.py: a tenant's index name (pure) and the one cached lookup of who has one."""

from __future__ import annotations

import re
from typing import Any

from brain_search.config import Settings
from brain_search.gateway.rules import allowed
from brain_search.index_names import IndexNames
from brain_search.store.placement import Placement, placement_for, tenant_alias, tenant_index

S = Settings(index_prefix="bx")
NAMES = IndexNames.of(S)


class Indices:
    def __init__(self) -> None:
        self.aliases: dict[str, dict[str, Any]] = {}
        self.lookups = 0

    def get_alias(self, name: str) -> dict[str, Any]:
        self.lookups += 1
        assert name == "bx-memories-tenant-*"
        return self.aliases


class Client:
    def __init__(self) -> None:
        self.indices = Indices()


def test_names_are_index_names_and_keep_tenants_apart() -> None:
    a, b = tenant_alias(NAMES, "Acme"), tenant_alias(NAMES, "acme")
    assert a != b and a.startswith("bx-memories-tenant-acme-") and a == a.lower()
    assert tenant_index(NAMES, "Acme") == f"{a}-v1"
    assert re.fullmatch(r"bx-memories-tenant-[a-z0-9_.-]+", tenant_alias(NAMES, "x.Y_z-1"))
    assert tenant_index(NAMES, "Acme").startswith("bx-memories-")  # the memories template's pattern


def test_the_lookup_is_cached_for_its_ttl_and_follows_a_move() -> None:
    now = [0.0]
    client = Client()
    p = Placement(client, S, ttl_s=2.0, clock=lambda: now[0])  # type: ignore[arg-type]
    assert p.index("acme") == "bx-memories" and p.index("other") == "bx-memories"
    assert client.indices.lookups == 1  # one lookup for every tenant
    client.indices.aliases = {tenant_index(NAMES, "acme"): {"aliases": {tenant_alias(NAMES, "acme"): {}}}}
    now[0] = 1.9
    assert p.index("acme") == "bx-memories"  # still cached
    now[0] = 2.1
    assert p.index("acme") == tenant_alias(NAMES, "acme")
    assert p.index("other") == "bx-memories"
    assert p.every() == ["bx-memories", tenant_alias(NAMES, "acme")]
    assert client.indices.lookups == 2
    p.forget()
    p.index("acme")
    assert client.indices.lookups == 3


def test_one_placement_per_client_and_prefix() -> None:
    client = Client()
    assert placement_for(client, S) is placement_for(client, S)  # type: ignore[arg-type]
    assert placement_for(client, S) is not placement_for(client, Settings(index_prefix="by"))  # type: ignore[arg-type]


def test_the_gateway_lets_the_api_and_workers_reach_a_tenant_index() -> None:
    p, alias = re.escape("bx"), tenant_alias(NAMES, "Acme")
    for role in ("api", "worker"):
        assert allowed(p, role, "GET", "/_alias/bx-memories-tenant-*")
    assert allowed(p, "worker", "POST", f"/{alias}/_bulk?refresh=wait_for")
    assert allowed(p, "worker", "POST", f"/{alias}/_mget?_source=tombstone_of%2Cmemory_id")
    assert allowed(p, "api", "POST", f"/{alias}/_msearch")
    assert allowed(p, "api", "POST", f"/bx-memories,{alias}/_delete_by_query?conflicts=proceed")
    assert not allowed(p, "worker", "POST", f"/{alias}/_delete_by_query")
    assert not allowed(p, "api", "PUT", f"/{alias}")  # creating it is the admin's
