"""The client library (client/, ``brain_search_client``) against the real stack, served by uvicorn:
every test runs with the sync and with the async client (``Twin``), which must behave the same."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from brain_search_client import (
    AdminClient,
    AsyncAdminClient,
    AsyncBrainClient,
    BrainClient,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    PreconditionFailed,
)
from brain_search_client.models import MemoryOut, ReplaceAccepted

from tests.conftest import ADMIN_KEY
from tests.integration.client_twins import Twin

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(live_api: str, flavour: str) -> Iterator[Callable[..., Twin]]:
    """connect(api_key=...) or connect(admin_key=...) → a client of this flavour, closed at the end."""
    loop = asyncio.new_event_loop() if flavour == "async" else None
    made: list[Twin] = []

    def make(*, api_key: str | None = None, admin_key: str | None = None, **kw: Any) -> Twin:
        if admin_key is not None:
            cls: Any = AsyncAdminClient if loop else AdminClient
            twin = Twin(cls(live_api, admin_key=admin_key, **kw), loop)
        else:
            cls = AsyncBrainClient if loop else BrainClient
            twin = Twin(cls(live_api, api_key=api_key, **kw), loop)
        made.append(twin)
        return twin

    yield make
    for twin in made:
        twin.close()
    if loop is not None:
        loop.close()


@pytest.fixture
def admin(connect: Callable[..., Twin]) -> Twin:
    return connect(admin_key=ADMIN_KEY)


def tenant(admin: Twin, tenant_id: str) -> Twin:
    return admin.tenant_client(tenant_id, label="test")


def test_a_memory_written_with_wait_is_recalled_at_once_and_changed_read_deleted(admin: Twin) -> None:
    brain = tenant(admin, "acme")
    out = brain.memories.add(
        content="The equity split with Jacob is 53% for me",
        memory_id="equity-1",
        node_id="Deals/Jacob",
        create_nodes=True,
        source="chat",
        wait=True,
    )
    assert out.searchable and out.memory_ids == ["equity-1"] and out.state.value == "succeeded"
    r = brain.recall('"53% for me"', strict=True)
    assert r.results[0].id == r.results[0].memory_id == "equity-1"  # the list's name for it, too
    assert brain.memories.list().memories[0].memory_id == "equity-1"
    stored = brain.memories.get("equity-1")
    assert stored.node_path == "Deals/Jacob" and stored.source == "chat"
    # fields change at once (PATCH without content); an old version is refused
    patched = brain.memories.update("equity-1", source="notes", if_version=stored.version)
    assert isinstance(patched, MemoryOut) and patched.source == "notes" and patched.content == stored.content
    with pytest.raises(PreconditionFailed) as stale:
        brain.memories.update("equity-1", source="mail", if_version=stored.version)
    assert stale.value.etag == str(patched.version)
    # a new text, waited for: the memory as stored, its other fields kept
    changed = brain.memories.update("equity-1", content="The equity split with Jacob is 55% for me", wait=True)
    assert isinstance(changed, MemoryOut) and "55%" in changed.content and changed.source == "notes"
    assert brain.recall('"55% for me"', strict=True).results[0].memory_id == "equity-1"
    replaced = brain.memories.replace("equity-1", "Jacob and I split equity 50/50", wait=True)
    assert isinstance(replaced, ReplaceAccepted)
    assert brain.memories.get("equity-1").source is None  # PUT clears what it does not name
    assert [v.replaced_by for v in brain.memories.history("equity-1").versions] == ["put", "patch", "patch"]
    assert brain.memories.purge_history("equity-1").deleted == 3
    assert brain.memories.delete("equity-1") is None
    with pytest.raises(NotFound):
        brain.memories.get("equity-1")


def test_errors_are_typed_and_a_422_names_the_field(admin: Twin) -> None:
    brain = tenant(admin, "acme")
    with pytest.raises(InvalidRequest) as bad:
        brain.memories.add(content="under a node that does not exist", node_id="Nowhere/Else")
    assert bad.value.status == 422 and bad.value.field == "node_id"
    with pytest.raises(InvalidRequest) as bad:
        brain.memories.add_many([{"content": "fine"}, {"content": "also fine", "node_id": "Nowhere"}])
    assert bad.value.field == "memories.1.node_id"
    with pytest.raises(InvalidRequest) as bad:
        brain.memories.list(node="Nowhere")
    assert bad.value.field == "node" and bad.value.errors[0]["field"] == "node"
    assert bad.value.body["detail"][0]["loc"] == ["query", "node"]  # a query parameter, named as one
    with pytest.raises(NotFound):
        brain.tasks.get("no-such-task")
    with pytest.raises(Conflict):
        admin.tenants.create("acme")
    assert admin.tenants.ensure("acme") is False


def test_pages_are_walked_and_an_export_imports_into_another_tenant(admin: Twin) -> None:
    acme, other = tenant(admin, "acme"), tenant(admin, "other")
    memories = [{"memory_id": f"m{i:02d}", "content": f"note {i} about the Porto office"} for i in range(7)]
    assert acme.memories.add_many(memories, user_id="lena", wait=True).indexed == 7
    acme.memories.update("m03", content="note 3 about the Lisbon office", wait=True)
    walked = acme.memories.iter(page_size=3)
    assert [m.memory_id for m in walked] == [f"m{i:02d}" for i in range(7)]
    assert {m.user_id for m in walked} == {"lena"}
    assert len(acme.memories.list(limit=3).memories) == 3
    lines = acme.memories.export()
    assert len(lines) == 7 and lines[3]["history"][0]["memory"]["content"] == "note 3 about the Porto office"
    outcomes = other.memories.import_(lines, batch_size=4)
    assert [o.indexed for o in outcomes] == [4, 3]
    assert other.memories.get("m03", user_id="lena").content == "note 3 about the Lisbon office"
    assert other.memories.history("m03").versions[0].memory.content == "note 3 about the Porto office"
    done = other.memories.forget(all=True, wait=True)
    assert done.state == "succeeded" and done.memories == 7
    assert other.memories.list().memories == []


def test_nodes_are_named_by_label_path_everywhere(admin: Twin) -> None:
    brain = tenant(admin, "acme")
    brain.nodes.create("Users/omar", description="Omar's corner")
    brain.nodes.create("Research/Memory")
    assert brain.nodes.get("Users/omar").description == "Omar's corner"
    related = brain.nodes.relate("Users/omar", "Research/Memory")
    assert brain.nodes.get("Research/Memory").id in related.related
    near = brain.nodes.neighbors("Users/omar", depth=2)
    assert {n.node.label for n in near.neighbors} >= {"Users", "Research/Memory"}
    assert [n.label for n in brain.nodes.iter(page_size=2)] == ["Research", "Research/Memory", "Users", "Users/omar"]
    brain.memories.add(content="Omar prefers mornings", node_id="Users/omar", wait=True)
    moved = brain.nodes.move("Users/omar", "People/omar")
    assert moved.node.label == "People/omar" and moved.task is not None and moved.task.state == "completed"
    assert brain.memories.list(node="People/omar").memories[0].node_path == "People/omar"
    with pytest.raises(Conflict):
        brain.nodes.delete("People/omar")  # it holds a memory
    gone = brain.nodes.delete("People/omar", cascade=True, wait=True)
    assert gone.task is not None and gone.task.state == "completed"
    with pytest.raises(NotFound):
        brain.nodes.get("People/omar")
    assert brain.nodes.unrelate("Research/Memory", "Research").related == []


def test_feedback_users_and_their_keys(admin: Twin, connect: Callable[..., Twin]) -> None:
    org = tenant(admin, "acme")
    key = org.users.create_key("lena", label="lena's phone")
    spare = org.users.create_key("lena", read_only=True)
    assert key.user_id == "lena" and {k.key_id for k in org.users.keys("lena")} == {key.key_id, spare.key_id}
    org.users.revoke_key("lena", spare.key_id)
    assert {k.key_id: k.revoked for k in org.users.keys("lena")} == {key.key_id: False, spare.key_id: True}
    lena = connect(api_key=key.key)
    lena.memories.add(content="Lena's dentist is on Friday", memory_id="lena-1", wait=True)
    org.memories.add(content="The office closes on Friday", memory_id="shared-1", wait=True)
    r = lena.recall("Friday")
    assert {x.memory_id for x in r.results} == {"lena-1"} and r.recall_id
    answer = lena.feedback.give(r.recall_id, rating=4, results={"lena-1": True})
    assert answer.rating == 4 and answer.results[0].memory_id == "lena-1"
    assert lena.feedback.summary().rating.count == 1
    with pytest.raises(Forbidden) as refused:
        lena.recall("Friday", user_id="omar")
    assert refused.value.field == "user_id"
    with pytest.raises(NotFound):
        lena.memories.get("shared-1")
    assert lena.memories.get("shared-1", include_shared=True).memory_id == "shared-1"
    assert lena.dead_letters.list().total == 0 and lena.dead_letters.purge().deleted == 0
    gone = org.users.forget("lena", wait=True)
    assert gone.state == "succeeded" and gone.memories == 1 and gone.keys == 2
    assert org.users.keys("lena") == []


def test_the_admin_routes(admin: Twin) -> None:
    created = admin.tenants.create_many(["t-a", "t-b", "t-c", "t-d"])
    assert created.created == ["t-a", "t-b", "t-c", "t-d"]
    assert admin.tenants.create("t-e", name="Echo").name == "Echo"
    page = admin.tenants.list(limit=2)
    assert len(page.tenants) == 2 and page.next_after == page.tenants[-1].tenant_id
    assert [t.tenant_id for t in admin.tenants.iter(page_size=2)] == ["t-a", "t-b", "t-c", "t-d", "t-e"]
    key = admin.keys.create("t-a", label="laptop")
    assert [k.key_id for k in admin.keys.list("t-a")] == [key.key_id]
    admin.keys.revoke(key.key_id)
    assert admin.keys.list("t-a")[0].revoked
    assert admin.tenants.set_rate_limit("t-a", requests_per_s=5, burst=10).burst == 10
    assert admin.tenants.set_feedback_retention("t-a", retention_s=7200).retention_s == 7200
    usage = admin.usage(days=3)
    assert usage.days == 3 and usage.rows == []  # no tenant holds a memory yet
    assert admin.audit(tenant="t-a", limit=10)[0]["action"] == "tenant.feedback_retention"
    assert admin.tenants.erase("t-b") is not None


def test_the_client_waits_out_429s_and_succeeds(admin: Twin, connect: Callable[..., Twin]) -> None:
    """The tenant's rate limit at 1 request a second (burst 1): every call still succeeds, each
    after the Retry-After the API sends."""
    brain = tenant(admin, "busy-co")
    admin.tenants.set_rate_limit("busy-co", requests_per_s=1, burst=1)
    started = time.monotonic()
    answers = [brain.recall("anything at all", limit=1) for _ in range(4)]
    took = time.monotonic() - started
    print(f"4 recalls at 1/s, burst 1: all answered in {took:.1f} s after {brain.retried} retries (429)")
    assert len(answers) == 4 and brain.retried >= 3 and took >= 2.5
    assert brain.health()["status"] == "ok" and brain.ready()["status"] == "ready"
