"""Issue 54 item 11: a forget ends the same after a SIGKILL of its API at any point. A real
`brain-search serve` is killed mid-forget and started again: the forget is taken over and run to
its end (nothing of the forgotten set is readable or searchable, history included), and the
writes accepted after the forget began are kept (memories, their history, their task records)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opensearchpy import OpenSearch, helpers

from brain_search.config import Settings
from brain_search.graph.ops import task_doc_id
from brain_search.store.documents import memory_doc_id
from brain_search.store.indices import IndexNames
from brain_search.store.templates import delete_indices
from tests.conftest import ADMIN_KEY
from tests.integration.cluster_support import ApiProcess
from tests.integration.ingest_support import worker_env

pytestmark = pytest.mark.integration
CLONES = 12_000  # enough pages (500 each) that the kill lands mid-forget
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture
def fsettings(stack_settings: Settings, client: OpenSearch) -> Iterator[Settings]:
    s = stack_settings.model_copy(update={"index_prefix": f"{stack_settings.index_prefix}-fr"})
    delete_indices(client, s)
    yield s
    delete_indices(client, s)


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_task(http: httpx.Client, headers: dict[str, str], task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        body: dict[str, Any] = http.get(f"/v1/tasks/{task_id}", headers=headers).json()
        if body["state"] in ("succeeded", "failed"):
            assert body["state"] == "succeeded", body
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def _write(http: httpx.Client, headers: dict[str, str], memories: list[dict[str, Any]]) -> str:
    r = http.post("/v1/memories", json={"memories": memories, "refresh": True}, headers=headers)
    assert r.status_code == 202, r.text
    task_id: str = r.json()["task_id"]
    _wait_task(http, headers, task_id)
    return task_id


def _tenant(http: httpx.Client, tenant: str) -> dict[str, str]:
    assert http.post("/v1/admin/tenants", json={"tenant_id": tenant}, headers=ADMIN).status_code == 201
    key = http.post(f"/v1/admin/tenants/{tenant}/keys", json={}, headers=ADMIN).json()["key"]
    return {"Authorization": f"Bearer {key}"}


def _clone(client: OpenSearch, s: Settings, tenant: str, memory_id: str, n: int) -> None:
    """``n`` copies of a stored memory (conversation and text included) straight into the index,
    without their vectors: a forget of many pages, without embedding them all."""
    r = client.get(index=s.memories_alias, id=memory_doc_id(tenant, memory_id), params={"routing": tenant})
    src = {k: v for k, v in r["_source"].items() if k != "embedding"}
    actions = (
        {
            "_id": memory_doc_id(tenant, f"{memory_id}-copy{i}"),
            "_routing": tenant,
            "_version": r["_version"],
            "_version_type": "external",
            "_source": {**src, "memory_id": f"{memory_id}-copy{i}"},
        }
        for i in range(n)
    )
    helpers.bulk(client, actions, index=s.memories_alias, chunk_size=2000, request_timeout=120)
    client.indices.refresh(index=s.memories_alias)


def _engine_ids(client: OpenSearch, s: Settings, tenant: str) -> set[str]:
    client.indices.refresh(index=s.memories_alias)
    body = {"query": {"term": {"tenant_id": tenant}}, "size": 10_000, "_source": ["memory_id"]}
    hits = client.search(index=s.memories_alias, body=body, params={"routing": tenant})["hits"]["hits"]
    return {h["_source"]["memory_id"] for h in hits}


def _history_count(client: OpenSearch, s: Settings, tenant: str, memory_id: str) -> int:
    names = IndexNames.of(s)
    client.indices.refresh(index=names.memory_history)
    query = {"bool": {"filter": [{"term": {"tenant_id": tenant}}, {"term": {"memory_id": memory_id}}]}}
    return int(client.count(index=names.memory_history, body={"query": query})["count"])


def test_a_forget_killed_midway_ends_the_same_after_a_restart(
    fsettings: Settings, client: OpenSearch, role_env: Any, tmp_path: Path
) -> None:
    s = fsettings
    env = {**worker_env(s, opensearch_url=s.opensearch_url, index_prefix=s.index_prefix, admin_key=ADMIN_KEY)}
    env.update(role_env("api"))
    port = _port()
    api = ApiProcess(env, port, tmp_path / "api-1.log").start()
    http = httpx.Client(base_url=api.url, timeout=60)
    try:
        acme, other = _tenant(http, "acme"), _tenant(http, "other")
        secret = [
            {"memory_id": f"c1-{i}", "content": f"the vault code is BLUEHERON {i}", "conversation_id": "c1"}
            for i in range(6)
        ]
        kept = [{"memory_id": f"c2-{i}", "content": f"the lunch menu {i}", "conversation_id": "c2"} for i in range(3)]
        _write(http, acme, secret + kept)
        put = http.put(
            "/v1/memories/c1-0",
            json={"content": "the vault code is BLUEHERON, v2", "conversation_id": "c1"},
            headers=acme,
        )
        _wait_task(http, acme, put.json()["task_id"])
        assert _history_count(client, s, "acme", "c1-0") == 1
        _write(http, other, [{"memory_id": "o1", "content": "the vault code is BLUEHERON", "conversation_id": "c1"}])
        _clone(client, s, "acme", "c1-1", CLONES)
        forgotten = {m["memory_id"] for m in secret} | {f"c1-1-copy{i}" for i in range(CLONES)}

        started = http.post("/v1/forget", json={"conversation_id": "c1"}, headers=acme)
        assert started.status_code == 202, started.text
        task_id = started.json()["task_id"]
        record = {"index": IndexNames.of(s).node_tasks, "id": task_doc_id("acme", task_id)}
        deadline = time.monotonic() + 60
        while client.get(**record)["_source"]["result"]["memories"] < 500:  # a page or more is done
            assert time.monotonic() < deadline, client.get(**record)["_source"]
            time.sleep(0.005)
        api.kill9()
        left = client.get(**record)["_source"]["result"]
        assert left["state"] == "running" and left["memories"] < CLONES, left  # the kill landed mid-forget

        api = ApiProcess(env, port, tmp_path / "api-2.log").start()
        # writes accepted after the forget began (here before or while it is taken over) are kept
        late = [
            {"memory_id": "c1-2", "content": "the vault is empty now", "conversation_id": "c1"},
            {"memory_id": "c1-late", "content": "a new chat turn", "conversation_id": "c1"},
        ]
        late_task = _write(http, acme, late)
        edit = {"content": "a new chat turn, edited", "conversation_id": "c1"}
        put = http.put("/v1/memories/c1-late", json=edit, headers=acme)
        _wait_task(http, acme, put.json()["task_id"])

        deadline = time.monotonic() + 120
        while (done := http.get(f"/v1/forget/{task_id}", headers=acme).json())["state"] == "running":
            assert time.monotonic() < deadline, f"the forget was not taken over: {done}"
            time.sleep(0.5)
        assert done["state"] == "succeeded", done

        # nothing of the forgotten set is readable or searchable, history included
        left_ids = _engine_ids(client, s, "acme")
        assert left_ids == {"c2-0", "c2-1", "c2-2", "c1-2", "c1-late"}, sorted(left_ids)[:20]
        for mid in ("c1-0", "c1-1", "c1-3", "c1-1-copy7"):
            assert http.get(f"/v1/memories/{mid}", headers=acme).status_code == 404
        assert http.get("/v1/memories/c1-0/history", headers=acme).status_code == 404
        assert _history_count(client, s, "acme", "c1-0") == 0
        recall = http.post("/v1/recall", json={"query": "vault code BLUEHERON", "limit": 20}, headers=acme)
        assert recall.status_code == 200, recall.text
        shown = {r["id"] for r in recall.json()["results"]}
        assert not shown & (forgotten - {"c1-2"}), shown  # c1-2 was written again after the forget
        assert all("BLUEHERON" not in r["content"] for r in recall.json()["results"])
        # what was accepted after it is kept: the memories, the history, the task record
        assert http.get("/v1/memories/c1-2", headers=acme).json()["content"] == "the vault is empty now"
        assert http.get("/v1/memories/c1-late", headers=acme).json()["content"] == "a new chat turn, edited"
        history = http.get("/v1/memories/c1-late/history", headers=acme).json()["versions"]
        assert [h["memory"]["content"] for h in history] == ["a new chat turn"]
        assert http.get(f"/v1/tasks/{late_task}", headers=acme).status_code == 200
        # another tenant's conversation of the same id is untouched
        assert _engine_ids(client, s, "other") == {"o1"}
    finally:
        http.close()
        api.stop()


def test_forgetting_a_user_ends_the_same_after_a_sigkill_of_its_api(
    fsettings: Settings, client: OpenSearch, role_env: Any, tmp_path: Path
) -> None:
    """Issue 67: `DELETE /v1/users/lena`, the API SIGKILLed mid-forget, another started: the
    forget is taken over and ends; a scan of every index of the prefix finds nothing of Lena's
    (memories, history, keys), and Omar's memories are untouched."""
    s = fsettings
    env = {**worker_env(s, opensearch_url=s.opensearch_url, index_prefix=s.index_prefix, admin_key=ADMIN_KEY)}
    env.update(role_env("api"))
    port = _port()
    api = ApiProcess(env, port, tmp_path / "api-1.log").start()
    http = httpx.Client(base_url=api.url, timeout=60)
    try:
        acme = _tenant(http, "acme")
        lena_key = http.post("/v1/users/lena/keys", json={}, headers=acme).json()["key"]
        lena = {"Authorization": f"Bearer {lena_key}"}
        _write(
            http, lena, [{"memory_id": f"l{i}", "content": f"my blood type is A positive, note {i}"} for i in range(4)]
        )
        put = http.put("/v1/memories/l0", json={"content": "my blood type is A negative"}, headers=lena)
        _wait_task(http, lena, put.json()["task_id"])
        _write(http, acme, [{"memory_id": "o1", "content": "Omar's blood type is O negative", "user_id": "omar"}])
        _clone(client, s, "acme", "l1", CLONES)
        started = http.delete("/v1/users/lena", headers=acme)
        assert started.status_code in (200, 202), started.text
        task_id = started.json()["task_id"]
        record = {"index": IndexNames.of(s).node_tasks, "id": task_doc_id("acme", task_id)}
        deadline = time.monotonic() + 60
        while client.get(**record)["_source"]["result"]["memories"] < 500:
            assert time.monotonic() < deadline, client.get(**record)["_source"]
            time.sleep(0.005)
        api.kill9()
        assert client.get(**record)["_source"]["result"]["state"] == "running"

        api = ApiProcess(env, port, tmp_path / "api-2.log").start()
        deadline = time.monotonic() + 120
        while (done := http.get(f"/v1/forget/{task_id}", headers=acme).json())["state"] == "running":
            assert time.monotonic() < deadline, f"the forget was not taken over: {done}"
            time.sleep(0.5)
        assert done["state"] == "succeeded", done
        names = IndexNames.of(s)
        client.indices.refresh(index=names.everything)
        found = client.search(
            index=names.everything, body={"query": {"term": {"user_id": "lena"}}, "size": 20, "_source": False}
        )["hits"]["hits"]
        assert found == [], [(h["_index"], h["_id"]) for h in found]  # memories, history, keys: nothing of hers
        assert http.get("/v1/memories", headers=lena).status_code == 401  # her key is gone
        assert _engine_ids(client, s, "acme") == {"o1"}
    finally:
        http.close()
        api.stop()
