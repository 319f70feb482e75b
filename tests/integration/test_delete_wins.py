"""A delete wins over every write accepted before it, whatever door the write came in by: the
HTTP API in worker mode, the API's embedded (in-process) path, MCP, and `brain-search ingest
--tenant` in-process. Each write is held after it was accepted and before it is written (a
paused worker, or a held embedder), the delete lands meanwhile, and the write must not bring the
memory back (issue 42.2)."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from typer.testing import CliRunner

from brain_search.encoders.embedding import Embedder
from tests.integration.ingest_support import WorkerProcess, memory_ids, tenant_headers, wait_task
from tests.integration.signals import stop_group

pytestmark = pytest.mark.integration


class HeldEmbedder:
    """A queue's embedder that holds each write between its acceptance and its bulk request:
    ``before`` runs first (once), or, while ``hold`` is on, the write waits for ``release``."""

    def __init__(self, inner: Embedder, before: Callable[[], None] | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.before = before
        self.waiting = threading.Event()
        self._open = threading.Event()
        self._open.set()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.before is not None:
            before, self.before = self.before, None
            before()
        if not self._open.is_set():
            self.waiting.set()
            assert self._open.wait(120), "never released"
        return self.inner.encode(texts)


@contextmanager
def held(state: Any) -> Iterator[HeldEmbedder]:
    """Hold the writes of the API's embedded queue until the block ends."""
    pipeline = state.ingest.queue.pipeline
    gate = HeldEmbedder(pipeline.embedder)
    pipeline.embedder = gate
    gate.hold()
    try:
        yield gate
    finally:
        gate.release()


@contextmanager
def paused(worker: WorkerProcess) -> Iterator[None]:
    assert worker.proc is not None
    stop_group(worker.proc.pid)
    try:
        yield
    finally:
        os.killpg(worker.proc.pid, signal.SIGCONT)


def _accepted(r: Any) -> dict[str, Any]:
    assert r.status_code == 202, r.text
    body: dict[str, Any] = r.json()
    return body


def _store(api: Any, headers: dict[str, str], memory_id: str, content: str) -> None:
    r = _accepted(
        api.post("/v1/memories", json={"content": content, "memory_id": memory_id, "refresh": True}, headers=headers)
    )
    assert wait_task(api, headers, r["task_id"])["indexed"] == 1


def _superseded(api: Any, headers: dict[str, str], task_id: str, timeout_s: float = 90) -> None:
    done = wait_task(api, headers, task_id, timeout_s=timeout_s)
    assert (done["state"], done["indexed"], done["superseded"]) == ("succeeded", 0, 1), done


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_http_door_worker_mode(wsettings, workers, worker_api, client) -> None:
    """POST, PUT and a text PATCH through the HTTP API, queued for a paused worker; DELETEs land."""
    w1 = workers("w1")
    acme = tenant_headers(worker_api, "acme")
    _store(worker_api, acme, "edited", "the offsite is in Lisbon")
    _store(worker_api, acme, "replaced", "the budget is 40k")
    with paused(w1):
        new = _accepted(
            worker_api.post(
                "/v1/memories",
                json={"content": "Jacob takes the CTO offer", "memory_id": "new", "refresh": True},
                headers=acme,
            )
        )
        edit = _accepted(
            worker_api.patch(
                "/v1/memories/edited", json={"content": "the offsite moved to Porto", "refresh": True}, headers=acme
            )
        )
        put = _accepted(
            worker_api.put(
                "/v1/memories/replaced", json={"content": "the budget is 55k", "refresh": True}, headers=acme
            )
        )
        assert worker_api.delete("/v1/memories/new", headers=acme).status_code == 202
        assert worker_api.delete("/v1/memories/edited", headers=acme).status_code == 204
        assert worker_api.delete("/v1/memories/replaced", headers=acme).status_code == 204
    for task in (new, edit, put):
        _superseded(worker_api, acme, task["task_id"], timeout_s=120)
    for m in ("new", "edited", "replaced"):
        assert worker_api.get(f"/v1/memories/{m}", headers=acme).status_code == 404
    assert memory_ids(client, wsettings, "acme") == []


def test_in_process_door_the_apis_embedded_path(api, make_tenant, client, stack_settings) -> None:
    """The same three writes in embedded mode, held inside the pipeline when the DELETEs land."""
    acme = make_tenant("acme")
    state = api.app.state.brain
    _store(api, acme, "edited", "the offsite is in Lisbon")
    _store(api, acme, "replaced", "the budget is 40k")
    with held(state) as gate:
        new = _accepted(
            api.post("/v1/memories", json={"content": "Jacob takes the CTO offer", "memory_id": "new"}, headers=acme)
        )
        edit = _accepted(api.patch("/v1/memories/edited", json={"content": "the offsite moved to Porto"}, headers=acme))
        put = _accepted(api.put("/v1/memories/replaced", json={"content": "the budget is 55k"}, headers=acme))
        assert gate.waiting.wait(60)  # the first write is past its checks, before its bulk request
        assert api.delete("/v1/memories/new", headers=acme).status_code == 202
        assert api.delete("/v1/memories/edited", headers=acme).status_code == 204
        assert api.delete("/v1/memories/replaced", headers=acme).status_code == 204
    for task in (new, edit, put):
        _superseded(api, acme, task["task_id"])
    for m in ("new", "edited", "replaced"):
        assert api.get(f"/v1/memories/{m}", headers=acme).status_code == 404
    assert memory_ids(client, stack_settings, "acme") == []


def test_mcp_door(live_api, api, make_tenant, client, stack_settings) -> None:
    """`brain_remember`, then `brain_forget` of the same memory before the write is made."""
    headers = make_tenant("mcp-co")
    state = api.app.state.brain

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with (
            streamablehttp_client(f"{live_api}/mcp/", headers=headers) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            stored = await session.call_tool("brain_remember", {"content": "Priya prefers Lisbon", "memory_id": "p1"})
            assert await anyio.to_thread.run_sync(gate.waiting.wait, 60)
            forgot = await session.call_tool("brain_forget", {"memory_id": "p1"})
            assert not stored.isError and not forgot.isError, (stored, forgot)
            return json.loads(stored.content[0].text), json.loads(forgot.content[0].text)  # type: ignore[union-attr]

    with held(state) as gate:
        stored, forgot = anyio.run(main)
    assert forgot == {"memory_id": "p1", "state": "deleted_before_stored"}
    _superseded(api, headers, stored["task_id"])
    assert api.get("/v1/memories/p1", headers=headers).status_code == 404
    assert memory_ids(client, stack_settings, "mcp-co") == []


def test_cli_door_ingest_in_process(api, make_tenant, embedder, client, monkeypatch, tmp_path: Path) -> None:
    """`brain-search ingest --tenant` (no API): a memory stored before, rewritten by the file; the
    DELETE (through the API) lands after the CLI accepted its write and before it is written."""
    from brain_search.commands.cli import app

    acme = make_tenant("acme")
    s = api.app.state.brain.settings
    _store(api, acme, "m", "the launch is in March")
    deletes: list[int] = []

    def delete_through_the_api() -> None:
        deletes.append(api.delete("/v1/memories/m", headers=acme).status_code)

    gate = HeldEmbedder(embedder, before=delete_through_the_api)
    monkeypatch.setattr("brain_search.encoders.factory.make_worker_embedder", lambda settings, *a, **kw: gate)
    monkeypatch.setenv("BRAIN_INDEX_PREFIX", s.index_prefix)
    monkeypatch.setenv("BRAIN_OPENSEARCH_URL", s.opensearch_url)
    monkeypatch.delenv("BRAIN_REDIS_URL", raising=False)
    monkeypatch.delenv("BRAIN_API_URL", raising=False)
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"content": "the launch moved to May", "memory_id": "m"}) + "\n")
    r = CliRunner().invoke(app, ["ingest", str(path), "--tenant", "acme", "--refresh"])
    assert r.exit_code == 0, r.output
    assert deletes == [204]
    assert api.get("/v1/memories/m", headers=acme).status_code == 404, api.get("/v1/memories/m", headers=acme).text
    assert memory_ids(client, s, "acme") == []
