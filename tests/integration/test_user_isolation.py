"""Users inside tenants, a property test on the real engine (issue 67): random users, agents and
shared memories in two tenants that write the same sentences; random scopes (user, agent,
include_shared), keys (the organisation's, a user's), queries and reads (recall, list, one memory).
No read ever returns a memory of another tenant, or of a user (or agent) outside its scope; a user's
key naming another user is always a 403.

Hypothesis draws the reads (seeded by the test's name: the same reads every run, shrunk to the
smallest failing one); the world is drawn from BRAIN_ISOLATION_SEED (printed) or at random."""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from brain_search.store.scope import UserScope
from tests.seed import Mem, seed_memories

pytestmark = pytest.mark.integration

TENANTS = ["org-a", "org-b"]
USERS = ["u0", "u1", "u2", "u3"]
AGENTS = [None, "coach", "scribe"]
SENTENCES = [
    "My blood type is O negative",
    "My dentist is Dr. Chen at the harbor clinic",
    "I live at 48 Birch Road in Leeds",
    "The plumber comes on Monday to fix the boiler",
    "My daughter starts school in September",
    "I am allergic to penicillin",
    "The quarterly roadmap review is on Friday",
    "My passport number ends in 4471",
]
QUERIES = [
    "What is my blood type?",
    "Who is my dentist?",
    "Where do I live?",
    "allergic",
    '"O negative"',
    "passport number",
    "Explore everything related to my health",
    "roadmap",
    "school",
]


def marker(tenant: str, user: str | None, agent: str | None) -> str:
    return f"[{tenant}/{user or '-'}/{agent or '-'}]"


@pytest.fixture
def world(api, make_tenant, client, embedder) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    world_seed = int(os.environ.get("BRAIN_ISOLATION_SEED", random.randrange(1 << 30)))
    print(f"BRAIN_ISOLATION_SEED={world_seed}")
    rng = random.Random(world_seed)
    settings_ = api.app.state.brain.settings
    keys: dict[tuple[str, str | None], dict[str, str]] = {}
    mems: list[Mem] = []
    owners: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    for t in TENANTS:
        keys[(t, None)] = make_tenant(t)
        for u in USERS:
            r = api.post(f"/v1/users/{u}/keys", json={}, headers=keys[(t, None)])
            assert r.status_code == 201, r.text
            keys[(t, u)] = {"Authorization": f"Bearer {r.json()['key']}"}
        for i in range(28):
            user = rng.choice([*USERS, None])
            agent = rng.choice(AGENTS)
            mid = f"m{i}"  # the same ids in both tenants
            mems.append(Mem(t, mid, f"{rng.choice(SENTENCES)} {marker(t, user, agent)}", user_id=user, agent_id=agent))
            owners[(t, mid)] = (user, agent)
    seed_memories(client, settings_, embedder, mems)
    return {"keys": keys, "owners": owners}


def _check(doc_tenant: str, owner: tuple[str | None, str | None], tenant: str, scope: UserScope, ctx: Any) -> None:
    assert doc_tenant == tenant, ctx
    assert scope.holds({"user_id": owner[0], "agent_id": owner[1]}), ctx


def _owner_of(content: str) -> tuple[str, tuple[str | None, str | None]]:
    tenant, user, agent = content.rsplit("[", 1)[1].rstrip("]").split("/")
    return tenant, (None if user == "-" else user, None if agent == "-" else agent)


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@seed(67)
@given(
    tenant=st.sampled_from(TENANTS),
    key_user=st.sampled_from([None, *USERS]),
    user=st.sampled_from([None, *USERS]),
    agent=st.sampled_from(AGENTS),
    shared=st.booleans(),
    query=st.sampled_from(QUERIES),
    op=st.sampled_from(["recall", "recall", "list", "get"]),
    strict=st.booleans(),
    memory=st.integers(0, 27),
)
def test_no_read_crosses_a_user_or_a_tenant(
    api, world, tenant, key_user, user, agent, shared, query, op, strict, memory
) -> None:  # type: ignore[no-untyped-def]
    headers = world["keys"][(tenant, key_user)]
    ctx = (tenant, key_user, user, agent, shared, query, op, memory)
    named = {k: v for k, v in (("user_id", user), ("agent_id", agent)) if v is not None}
    if key_user is not None and user is not None and user != key_user:  # a user's key naming another
        r = api.post("/v1/recall", json={"query": query, **named}, headers=headers)
        assert r.status_code == 403 and r.json()["field"] == "user_id", (ctx, r.text)
        return
    scope = UserScope(key_user or user, agent, shared)
    if op == "recall":
        body = {"query": query, "limit": 50, "strict": strict, "tiered": True, "include_shared": shared, **named}
        r = api.post("/v1/recall", json=body, headers=headers)
        assert r.status_code == 200, (ctx, r.text)
        out = r.json()
        for res in [*out["results"], *(x for tier in (out["tiers"] or {}).values() for x in tier)]:
            doc_tenant, owner = _owner_of(res["content"])
            assert owner == (res["metadata"]["user_id"], res["metadata"]["agent_id"]), (ctx, res)
            _check(doc_tenant, owner, tenant, scope, (ctx, res["content"]))
            assert not strict or res["scores"]["relevance"] > 0, (ctx, res)  # strict: never at relevance 0
    elif op == "list":
        r = api.get("/v1/memories", params={"limit": 1000, "include_shared": shared, **named}, headers=headers)
        assert r.status_code == 200, (ctx, r.text)
        listed = r.json()["memories"]
        for m in listed:
            _check(_owner_of(m["content"])[0], (m["user_id"], m["agent_id"]), tenant, scope, (ctx, m))
        expected = {
            mid
            for (t, mid), o in world["owners"].items()
            if t == tenant and scope.holds(dict(zip(("user_id", "agent_id"), o, strict=True)))
        }
        assert {m["memory_id"] for m in listed} == expected, ctx  # every one of the scope's, none other
    else:
        i = memory  # the same ids in both tenants: the key's tenant's, never the other's
        r = api.get(f"/v1/memories/m{i}", params={"include_shared": shared, **named}, headers=headers)
        owner = world["owners"][(tenant, f"m{i}")]
        visible = scope.holds({"user_id": owner[0], "agent_id": owner[1]})
        assert r.status_code == (200 if visible else 404), (ctx, r.text)
        if visible:
            assert _owner_of(r.json()["content"])[0] == tenant, ctx
