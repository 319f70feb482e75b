"""Tenant isolation, randomized: several tenants with overlapping content (the same memory ids,
node labels and sentences), many reads through the API, zero results of another tenant.

The random seed is printed and can be pinned with BRAIN_ISOLATION_SEED to replay a failure.
"""

from __future__ import annotations

import logging
import os
import random
from typing import Any

import pytest

from tests.conftest import ADMIN_KEY
from tests.seed import Mem, seed_memories

pytestmark = pytest.mark.integration

TENANTS = ["iso-a", "iso-b", "iso-c", "iso-d"]
SHARED_LABELS = ["aiConnected/Brain", "aiConnected/Brain/Architecture", "aiConnected/Web", "Personal/Notes"]
SENTENCES = [
    "The equity split is 53% for me, 10% each for the others",
    "Jacob asked about the CTO offer and his compensation",
    "Fair partnership principles from the startup reading",
    "General thoughts on building founding teams",
    "Brain stores one vector index per knowledge graph node",
    "The marketing website needs a new landing page",
    "Exact quotes must be found word for word",
    "Episodic and semantic memory are different things",
]
QUERIES = [
    "equity split",
    '"53% for me"',
    "Find exactly where I said equity",
    "ideas related to building teams",
    "what do I think about partnerships generally",
    "vector index",
    "CTO compensation",
    "landing page",
    "memory",
]
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def marker(tenant: str) -> str:
    return f"[owner {tenant}]"


@pytest.fixture
def world(api, make_tenant, client, embedder) -> dict[str, Any]:
    """Four tenants, each with the same shared labels and sentences (tagged with the owner) and a
    node and memories of its own."""
    seed = int(os.environ.get("BRAIN_ISOLATION_SEED", random.randrange(1 << 30)))
    print(f"BRAIN_ISOLATION_SEED={seed}")
    rng = random.Random(seed)
    settings = api.app.state.brain.settings
    headers: dict[str, dict[str, str]] = {}
    own_nodes: dict[str, dict[str, Any]] = {}
    mems: list[Mem] = []
    for t in TENANTS:
        headers[t] = make_tenant(t)
        for label in SHARED_LABELS:
            r = api.post("/v1/nodes", json={"label": label, "description": f"desc {t}"}, headers=headers[t])
            assert r.status_code == 201, r.text
        r = api.post("/v1/nodes", json={"label": f"Only/{t}", "description": f"desc {t}"}, headers=headers[t])
        own_nodes[t] = r.json()
        for j, sentence in enumerate(SENTENCES):
            label = rng.choice(SHARED_LABELS)
            mems.append(Mem(t, f"m{j}", f"{sentence} {marker(t)}", label))
        mems.append(Mem(t, f"{t}-only", f"A memory only {t} has about equity {marker(t)}", f"Only/{t}"))
    seed_memories(client, settings, embedder, mems)
    return {"rng": rng, "seed": seed, "headers": headers, "own_nodes": own_nodes}


def _results(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(body["results"])
    for tier in (body.get("tiers") or {}).values():
        out += tier
    return out


def test_no_tenant_ever_sees_another_tenants_data(api, world) -> None:
    rng: random.Random = world["rng"]
    headers, own_nodes = world["headers"], world["own_nodes"]
    # memory reads join in once the ingestion routes (GET /v1/memories/{id}) are part of the app
    has_memory_reads = any(
        getattr(r, "path", "").startswith("/v1/memories/{") and "GET" in getattr(r, "methods", ())
        for r in api.app.routes
    )
    recalls = results_seen = 0
    recall_ids: dict[str, str] = {}  # each tenant's latest recall, for feedback
    for step in range(80):
        t = rng.choice(TENANTS)
        h = headers[t]
        others = [o for o in TENANTS if o != t]
        ctx = f"seed={world['seed']} step={step} tenant={t}"
        op = rng.choice(["recall", "recall", "recall", "nodes", "node", "neighbors", "foreign"])
        if op == "recall":
            body: dict[str, Any] = {"query": rng.choice(QUERIES), "limit": rng.choice([3, 10, 50])}
            if rng.random() < 0.5:
                body["focus"] = rng.choice(["exact", "precise", "balanced", "conceptual", "broad"])
            if rng.random() < 0.3:
                body["z_value"] = round(rng.random(), 2)
            if rng.random() < 0.4:
                body["nodes"] = rng.sample([*SHARED_LABELS, own_nodes[t]["id"]], k=rng.randint(1, 2))
                body["expand_related"] = rng.randint(0, 2)
            body["tiered"] = rng.random() < 0.3
            r = api.post("/v1/recall", json=body, headers=h)
            assert r.status_code == 200, (ctx, r.text)
            got = _results(r.json())
            recall_ids[t] = r.json()["recall_id"]
            recalls += 1
            results_seen += len(got)
            for res in got:
                assert res["content"].endswith(marker(t)), (ctx, body, res["content"])
        elif op == "nodes":
            params = rng.choice([{}, {"prefix": rng.choice(["a", "aiConnected/", "Only", "P"])}, {"subtree": "Only"}])
            r = api.get("/v1/nodes", params=params, headers=h)
            assert r.status_code == 200, (ctx, r.text)
            for n in r.json()["nodes"]:
                assert n["description"] in (None, f"desc {t}"), (ctx, n)
                assert not any(n["label"] == f"Only/{o}" for o in others), (ctx, n)
        elif op == "node":
            r = api.get(f"/v1/nodes/{own_nodes[t]['id']}", headers=h)
            assert r.status_code == 200 and r.json()["description"] == f"desc {t}", ctx
        elif op == "neighbors":
            r = api.get(f"/v1/nodes/{own_nodes[t]['id']}/neighbors", params={"depth": 2}, headers=h)
            assert r.status_code == 200, (ctx, r.text)
            for nb in r.json()["neighbors"]:
                assert nb["node"]["description"] in (None, f"desc {t}"), (ctx, nb)
        else:  # asking for another tenant's things by id / label: as if they did not exist
            o = rng.choice(others)
            foreign = own_nodes[o]
            assert api.get(f"/v1/nodes/{foreign['id']}", headers=h).status_code == 404, ctx
            assert api.get(f"/v1/nodes/{foreign['id']}/neighbors", headers=h).status_code == 404, ctx
            assert api.get("/v1/nodes", params={"label": foreign["label"]}, headers=h).status_code == 404, ctx
            r = api.post("/v1/recall", json={"query": "equity", "nodes": [foreign["label"]]}, headers=h)
            assert r.status_code == 422 and "unknown node" in r.text, (ctx, r.text)
            r = api.post("/v1/recall", json={"query": "equity", "nodes": [foreign["id"]]}, headers=h)
            assert r.status_code == 422, (ctx, r.text)
            if o in recall_ids:  # another tenant's recall: as if it did not exist (404, never 403)
                r = api.post(f"/v1/recall/{recall_ids[o]}/feedback", json={"rating": 1}, headers=h)
                assert r.status_code == 404, (ctx, r.text)
            if has_memory_reads:
                assert api.get(f"/v1/memories/{o}-only", headers=h).status_code == 404, ctx
    assert recalls >= 20 and results_seen >= 100, (recalls, results_seen)  # the reads really returned data


def test_a_tenants_recall_finds_its_own_private_memory(api, world) -> None:
    """The control for the test above: the data is there for its owner."""
    for t in TENANTS:
        r = api.post("/v1/recall", json={"query": f"A memory only {t} has", "limit": 5}, headers=world["headers"][t])
        assert r.status_code == 200
        ids = [x["id"] for x in r.json()["results"]]
        assert f"{t}-only" in ids
        assert not any(x.endswith("-only") and x != f"{t}-only" for x in ids)


def test_missing_unknown_and_revoked_keys_are_401(api, world) -> None:
    t = TENANTS[0]
    r = api.post(f"/v1/admin/tenants/{t}/keys", json={"label": "to revoke"}, headers=ADMIN)
    key, key_id = r.json()["key"], r.json()["key_id"]
    good = {"Authorization": f"Bearer {key}"}
    node_id = world["own_nodes"][t]["id"]
    calls = [
        ("POST", "/v1/recall", {"json": {"query": "equity"}}),
        ("GET", "/v1/nodes", {}),
        ("GET", f"/v1/nodes/{node_id}", {}),
        ("POST", "/v1/nodes", {"json": {"label": "new/node"}}),
        ("GET", f"/v1/nodes/{node_id}/neighbors", {}),
    ]
    assert api.get("/v1/nodes", headers=good).status_code == 200
    assert api.get("/v1/nodes", headers={"X-API-Key": key}).status_code == 200
    api.delete(f"/v1/admin/keys/{key_id}", headers=ADMIN)
    bad_headers = [
        {},
        {"Authorization": "Bearer bsk_000000000000_unknown"},
        {"Authorization": "Basic " + key},
        {"X-API-Key": "nope"},
        good,  # revoked
    ]
    for method, path, kw in calls:
        for h in bad_headers:
            r = api.request(method, path, headers=h, **kw)
            assert r.status_code == 401, (method, path, h.keys(), r.status_code)
            assert r.headers["www-authenticate"] == "Bearer"
    # the tenant's other key still works
    assert api.get("/v1/nodes", headers=world["headers"][t]).status_code == 200


def test_keys_are_never_logged(api, make_tenant, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    h = make_tenant("logged")
    key = h["Authorization"].split()[1]
    api.get("/v1/nodes", headers=h)
    api.post("/v1/recall", json={"query": "anything"}, headers=h)
    api.get("/v1/nodes", headers={"Authorization": f"Bearer {key}x"})  # an unknown key
    key_id = key.split("_")[1]
    api.delete(f"/v1/admin/keys/{key_id}", headers=ADMIN)
    api.get("/v1/nodes", headers=h)  # revoked
    assert caplog.records, "nothing was logged at all: the check would be vacuous"
    secret = key.split("_", 2)[2]
    for rec in caplog.records:
        text = rec.getMessage() + repr(rec.args)
        assert secret not in text and ADMIN_KEY not in text, rec.name


def test_the_query_cache_is_per_tenant(api, make_tenant) -> None:
    """A tenant's recall is fast only for queries it asked itself: another tenant's identical
    query is a cache miss, so ``timings.embed_ms`` says nothing about what others search for."""
    a, b = make_tenant("cache-a"), make_tenant("cache-b")
    cache = api.app.state.brain.query_cache
    query = {"query": "zebra quorum ledger on the third moon", "limit": 3}

    def embed_ms(headers: dict[str, str]) -> tuple[float, int]:
        before = cache.hits
        r = api.post("/v1/recall", json=query, headers=headers)
        assert r.status_code == 200, r.text
        return r.json()["timings"]["embed_ms"], cache.hits - before

    a_first, a_first_hit = embed_ms(a)
    b_first, b_first_hit = embed_ms(b)
    a_again, a_again_hit = embed_ms(a)
    print(f"embed_ms: A first {a_first:.2f}, B the same query {b_first:.2f}, A again {a_again:.2f}")
    assert (a_first_hit, b_first_hit, a_again_hit) == (0, 0, 1)


def test_writes_deletes_tasks_and_copies_never_cross_tenants(api, make_tenant, live_api, client) -> None:
    """Four tenants write the same memory ids; randomized rounds of reads, writes, updates,
    deletes, task and dead-letter reads, history and forget, over HTTP and MCP: whatever one
    tenant does, every other tenant's memories are exactly what it wrote (0 leaks)."""
    import json

    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    from brain_search.ingest.bulk import ItemOutcome
    from brain_search.ingest.models import MemoryItem
    from tests.integration.ingest_support import wait_task

    seed = int(os.environ.get("BRAIN_ISOLATION_SEED", random.randrange(1 << 30)))
    print(f"BRAIN_ISOLATION_SEED={seed}")
    rng = random.Random(seed)
    tenants = [f"w-{t}" for t in TENANTS]
    headers = {t: make_tenant(t) for t in tenants}
    expected: dict[str, dict[str, str]] = {t: {} for t in tenants}  # tenant → memory id → content
    tasks: dict[str, str] = {}
    ingest = api.app.state.brain.ingest
    for t in tenants:  # the same ids everywhere, a dead letter and a task each
        mems = [{"content": f"note {i} about equity {marker(t)}", "memory_id": f"shared-{i}"} for i in range(4)]
        r = api.post("/v1/memories", json={"memories": mems, "refresh": True}, headers=headers[t])
        tasks[t] = r.json()["task_id"]
        wait_task(api, headers[t], tasks[t])
        expected[t].update({m["memory_id"]: m["content"] for m in mems})
        bad = MemoryItem(memory_id="shared-dead", content=f"dead {marker(t)}")
        ingest.dead_letters.add(t, tasks[t], [(bad, ItemOutcome("shared-dead", False, reason="r"))], 1)

    async def mcp(t: str, tool: str, args: dict[str, Any]) -> Any:
        async with (
            streamablehttp_client(f"{live_api}/mcp/", headers=headers[t]) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            res = await session.call_tool(tool, args)
            return json.loads(res.content[0].text)  # type: ignore[union-attr]

    leaks: list[str] = []
    schedule = ["put", "delete", "remember", "forget", "task", "dead", "history", "recall"] * 5
    rng.shuffle(schedule)  # every kind of step five times, in a random order
    for step, op in enumerate(schedule):
        t = rng.choice(tenants)
        h, other = headers[t], rng.choice([o for o in tenants if o != t])
        ctx = f"seed={seed} step={step} tenant={t}"
        mid = f"shared-{rng.randrange(4)}"
        if op == "put" and mid in expected[t]:
            content = f"rewritten {step} {marker(t)}"
            r = api.put(f"/v1/memories/{mid}", json={"content": content, "refresh": True}, headers=h)
            wait_task(api, h, r.json()["task_id"])
            expected[t][mid] = content
        elif op == "delete" and mid in expected[t]:
            assert api.delete(f"/v1/memories/{mid}", headers=h).status_code == 204, ctx
            del expected[t][mid]
        elif op == "remember":
            content = f"remembered {step} {marker(t)}"
            out = anyio.run(mcp, t, "brain_remember", {"content": content, "memory_id": mid})
            wait_task(api, h, out["task_id"])
            expected[t][mid] = content
        elif op == "forget" and mid in expected[t]:
            anyio.run(mcp, t, "brain_forget", {"memory_id": mid})
            expected[t].pop(mid, None)
        elif op == "task":
            assert api.get(f"/v1/tasks/{tasks[other]}", headers=h).status_code == 404, ctx
        elif op == "dead":
            for d in api.get("/v1/dead-letters", headers=h).json()["items"]:
                if marker(t) not in json.dumps(d):
                    leaks.append(f"{ctx}: dead letter {d}")
        elif op == "history":
            r = api.get(f"/v1/memories/{mid}/history", headers=h)
            for v in r.json().get("versions", []) if r.status_code == 200 else []:
                if marker(t) not in v["memory"]["content"]:
                    leaks.append(f"{ctx}: history {v}")
        else:
            body = anyio.run(mcp, t, "brain_recall", {"query": "equity note", "limit": 20})
            leaks += [f"{ctx}: recall {x['content']}" for x in body["results"] if marker(t) not in x["content"]]
    # brain_remember writes without refresh: the list (a search) sees its last write after one
    client.indices.refresh(index=api.app.state.brain.settings.memories_alias)
    for t in tenants:  # every tenant holds exactly what it wrote
        r = api.get("/v1/memories", params={"limit": 1000}, headers=headers[t])
        got = {m["memory_id"]: m["content"] for m in r.json()["memories"]}
        if got != expected[t]:
            leaks.append(f"seed={seed} {t}: holds {got}, wrote {expected[t]}")
    assert not leaks, leaks[:5]
