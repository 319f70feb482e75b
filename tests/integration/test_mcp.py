"""The MCP server through the SDK's own client, over real transports (stdio and streamable HTTP)."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time

import anyio
import pytest
import uvicorn
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

from brain_search.api.app import create_app
from brain_search.mcp.server import RECALL_INPUT_SCHEMA

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def live_server(api):  # type: ignore[no-untyped-def]
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(state=api.app.state.brain), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


async def _use(session: ClientSession) -> tuple[list, dict, str]:  # type: ignore[type-arg]
    await session.initialize()
    tools = (await session.list_tools()).tools
    ok = await session.call_tool("brain_recall", {"query": 'Find where I said "53% for me"', "limit": 3})
    bad = await session.call_tool("brain_recall", {"query": "x", "z_value": 7})
    assert bad.isError
    # conversation context (issue 42 item 5): the field in the schema, the conversations in the answer
    ctx = await session.call_tool("brain_recall", {"query": 'Find where I said "53% for me"', "context": 1})
    convs = json.loads(ctx.content[0].text)["conversations"]  # type: ignore[union-attr]
    assert convs[0]["conversation_id"] == "conv-eq" and [t["id"] for t in convs[0]["turns"]] == ["eq"], convs
    bad_ctx = await session.call_tool("brain_recall", {"query": "x", "context": 9})
    assert bad_ctx.isError and "context" in bad_ctx.content[0].text  # type: ignore[union-attr]
    unknown = await session.call_tool("brain_recall", {"query": "x", "z_formula": "ratio"})
    assert unknown.isError and "z_formula" in unknown.content[0].text  # type: ignore[union-attr]
    # tiers hold only matches; "nothing matched" is the same field as over HTTP
    none = await session.call_tool(
        "brain_recall", {"query": "quantum chromodynamics lattice simulations", "tiered": True}
    )
    qa = json.loads(none.content[0].text)["query_analysis"]  # type: ignore[union-attr]
    assert qa["nothing_matched"] is True and qa["z_formula"] == "calibrated"
    return tools, json.loads(ok.content[0].text), bad.content[0].text  # type: ignore[union-attr]


def test_mcp_over_streamable_http(live_server, alice) -> None:
    async def main() -> tuple[list, dict, str]:  # type: ignore[type-arg]
        async with (
            streamablehttp_client(f"{live_server}/mcp/", headers=alice) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            return await _use(session)

    tools, result, error = anyio.run(main)
    assert [t.name for t in tools] == ["brain_recall", "brain_remember", "brain_forget", "brain_feedback"]
    assert tools[0].inputSchema == RECALL_INPUT_SCHEMA
    assert result["results"][0]["id"] == "eq"
    assert result["results"][0]["scores"]["lexical"] == 1.0
    assert result["query_analysis"]["detected_intent"] == "exact"
    assert "z_value" in error


def test_mcp_over_http_needs_a_key_from_initialize_on(live_server, alice) -> None:
    """No key, or a wrong one: `initialize` and `tools/list` are a 401 like every other request."""
    import httpx

    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    for body in (init, listing):
        for headers in ({}, {"X-API-Key": "bsk_wrong"}, {"Authorization": "Bearer bsk_wrong"}):
            r = httpx.post(f"{live_server}/mcp/", json=body, headers={**accept, **headers}, timeout=30)
            assert r.status_code == 401, (body["method"], headers, r.status_code, r.text)
            assert r.headers["www-authenticate"] == "Bearer" and "API key" in r.json()["detail"]
    ok = httpx.post(f"{live_server}/mcp/", json=init, headers={**accept, **alice}, timeout=30)
    assert ok.status_code == 200, ok.text

    async def main() -> bool:
        async with (
            streamablehttp_client(f"{live_server}/mcp/", headers={"X-API-Key": "bsk_wrong"}) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
        return True

    with pytest.raises(ExceptionGroup):  # the SDK's client gives up at initialize (its task group fails)
        anyio.run(main)


def test_mcp_over_stdio(api, alice, stack_settings, role_env) -> None:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "BRAIN_INDEX_PREFIX": stack_settings.index_prefix,
        "BRAIN_OPENSEARCH_URL": stack_settings.opensearch_url,
        "BRAIN_CACHE_DIR": str(stack_settings.cache_dir),
        "BRAIN_MCP_TENANT": "alice",
        **role_env("api"),
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "brain_search.commands.cli", "mcp"], env=env)

    async def recall_ids(session: ClientSession, query: str) -> list[str]:
        got = await session.call_tool("brain_recall", {"query": query, "limit": 5})
        return [r["id"] for r in json.loads(got.content[0].text)["results"]]  # type: ignore[union-attr]

    async def until(session: ClientSession, query: str, present: bool) -> bool:
        deadline = time.monotonic() + 60
        while ("stdio-1" in await recall_ids(session, query)) != present:
            if time.monotonic() > deadline:
                return False
            await anyio.sleep(0.5)
        return True

    async def main() -> tuple[list, dict, dict[str, object]]:  # type: ignore[type-arg]
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            tools, result, _ = await _use(session)
            out: dict[str, object] = {"names": [t.name for t in (await session.list_tools()).tools]}
            rated = await session.call_tool("brain_feedback", {"recall_id": result["recall_id"], "rating": 5})
            out["rated"] = json.loads(rated.content[0].text)["rating"] if not rated.isError else rated  # type: ignore[union-attr]
            stored = await session.call_tool(
                "brain_remember", {"content": "zebra quorum over stdio", "memory_id": "stdio-1"}
            )
            out["stored"] = not stored.isError
            out["found"] = await until(session, "zebra quorum over stdio", True)
            forgot = await session.call_tool("brain_forget", {"memory_id": "stdio-1"})
            out["forgot"] = not forgot.isError
            out["gone"] = await until(session, "zebra quorum over stdio", False)
            return tools, result, out

    tools, result, out = anyio.run(main)
    assert tools[0].name == "brain_recall"
    assert result["results"][0]["id"] == "eq"
    assert set(out["names"]) == {"brain_recall", "brain_remember", "brain_forget", "brain_feedback"}, out  # type: ignore[arg-type]
    assert out["rated"] == 5, out
    assert out["stored"] and out["found"] and out["forgot"] and out["gone"], out


def test_mcp_remember_and_forget(live_server, make_tenant) -> None:
    headers = make_tenant("mcp-co")

    async def main() -> dict[str, object]:
        async with (
            streamablehttp_client(f"{live_server}/mcp/", headers=headers) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            out: dict[str, object] = {}
            stored = await session.call_tool(
                "brain_remember", {"content": "Priya prefers the Lisbon offsite", "memory_id": "p1"}
            )
            out["stored"] = json.loads(stored.content[0].text)  # type: ignore[union-attr]
            bad = await session.call_tool("brain_remember", {"content": " "})
            out["bad"] = (bad.isError, bad.content[0].text)  # type: ignore[union-attr]
            deadline = time.monotonic() + 60
            while True:
                got = await session.call_tool("brain_recall", {"query": "Lisbon offsite", "limit": 3})
                ids = [r["id"] for r in json.loads(got.content[0].text)["results"]]  # type: ignore[union-attr]
                if ids or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.3)
            out["recalled"] = ids
            everything = await session.call_tool("brain_forget", {})
            out["guard"] = (everything.isError, everything.content[0].text)  # type: ignore[union-attr]
            gone = await session.call_tool("brain_forget", {"memory_id": "p1"})
            out["forgot"] = json.loads(gone.content[0].text)  # type: ignore[union-attr]
            again = await session.call_tool("brain_forget", {"memory_id": "p1"})
            out["again"] = again.isError
            return out

    out = anyio.run(main)
    assert out["stored"]["memory_ids"] == ["p1"]  # type: ignore[index]
    assert out["bad"][0] and "content" in out["bad"][1]  # type: ignore[index]
    assert out["recalled"] == ["p1"]
    assert out["guard"][0] and "all" in out["guard"][1]  # type: ignore[index]
    assert out["forgot"] == {"memory_id": "p1", "state": "deleted"}
    assert out["again"] is True  # unknown now: an error, not a silent success


def test_mcp_remember_can_wait_until_searchable(live_server, make_tenant) -> None:
    """Issue 42 item 7: `brain_remember` with `wait: true` returns once the memory is searchable,
    so a recall right after it finds it (without `wait` it answers `queued` at once)."""
    headers = make_tenant("mcp-wait")

    async def main() -> dict[str, object]:
        async with (
            streamablehttp_client(f"{live_server}/mcp/", headers=headers) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            out: dict[str, object] = {"schema": tools["brain_remember"].inputSchema["properties"]}
            stored = await session.call_tool(
                "brain_remember",
                {"content": "Ilse keeps the spare keys under the blue planter", "memory_id": "k1", "wait": True},
            )
            out["stored"] = (stored.isError, stored.content[0].text)  # type: ignore[union-attr]
            got = await session.call_tool("brain_recall", {"query": "spare keys blue planter", "limit": 3})
            out["recalled"] = [r["id"] for r in json.loads(got.content[0].text)["results"]]  # type: ignore[union-attr]
            queued = await session.call_tool("brain_remember", {"content": "a note, not waited for", "memory_id": "k2"})
            out["queued"] = json.loads(queued.content[0].text)  # type: ignore[union-attr]
            bad = await session.call_tool("brain_remember", {"content": "x", "wait": "soon"})
            out["bad"] = (bad.isError, bad.content[0].text)  # type: ignore[union-attr]
            return out

    out = anyio.run(main)
    is_error, text = out["stored"]  # type: ignore[misc]
    assert not is_error, text
    assert {"wait", "refresh"} <= set(out["schema"]), out["schema"]  # type: ignore[arg-type]
    stored = json.loads(text)
    assert stored["state"] == "succeeded" and stored["searchable"] is True and stored["indexed"] == 1, stored
    assert stored["memory_ids"] == ["k1"]
    assert out["recalled"][:1] == ["k1"], out  # type: ignore[index]
    assert out["queued"]["state"] == "queued" and out["queued"]["searchable"] is False, out  # type: ignore[index]
    assert out["bad"][0] and "wait" in out["bad"][1], out  # type: ignore[index]


def test_mcp_errors_do_not_echo_a_megabyte(live_server, make_tenant) -> None:
    """Issue 42 item 9: a 1 MB argument is refused with a short message (a bounded prefix at most)."""
    headers = make_tenant("mcp-big")
    big = "x" * 1_000_000

    async def main() -> list[tuple[bool, str]]:
        async with (
            streamablehttp_client(f"{live_server}/mcp/", headers=headers, timeout=120) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            answers = []
            for tool, args in (
                ("brain_recall", {"query": big}),
                ("brain_remember", {"content": "a note", "node_id": big}),
                ("brain_remember", {"content": "a note", "memory_id": "m1", "source": big}),
                ("brain_forget", {"node": big}),
            ):
                r = await session.call_tool(tool, args)
                answers.append((r.isError, r.content[0].text))  # type: ignore[union-attr]
            return answers

    for is_error, text in anyio.run(main):
        assert is_error and len(text) < 2_000, (len(text), text[:300])
