"""The client's requests and errors without a server (``httpx.MockTransport``, a pure unit test of
the transport): what is retried, what is raised, what a 422 names. The same calls against the
real stack: tests/integration/test_client.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import brain_search_client._async.transport as async_transport
import brain_search_client._sync.transport as sync_transport
import httpx
import pytest
from brain_search_client import (
    AsyncBrainClient,
    BrainClient,
    ConnectionFailed,
    InvalidRequest,
    NotFound,
    RateLimited,
    Unavailable,
)

TASK = {"task_id": "t1", "state": "queued", "submitted": 1, "memory_ids": ["m1"]}


def scripted(answers: list[Any], seen: list[httpx.Request]) -> Callable[[httpx.Request], httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handle


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []

    async def asleep(s: float) -> None:
        waits.append(s)

    monkeypatch.setattr(sync_transport, "sleep", waits.append)
    monkeypatch.setattr(async_transport, "sleep", asleep)
    return waits


def sync_client(answers: list[Any], seen: list[httpx.Request]) -> BrainClient:
    http = httpx.Client(transport=httpx.MockTransport(scripted(answers, seen)))
    return BrainClient("http://brain.test", api_key="bsk_k", http_client=http)


def test_a_429_is_waited_out_as_retry_after_says(slept: list[float]) -> None:
    seen: list[httpx.Request] = []
    limited = httpx.Response(429, json={"detail": "rate limit"}, headers={"Retry-After": "2"})
    brain = sync_client([limited, limited, httpx.Response(202, json=TASK)], seen)
    out = brain.memories.add(content="no id: not idempotent, yet a 429 is safe to retry")
    assert out.task_id == "t1" and len(seen) == 3 and brain.retried == 2
    assert all(w >= 2 for w in slept)
    assert seen[0].headers["authorization"] == "Bearer bsk_k"
    assert json.loads(seen[0].content) == {"content": "no id: not idempotent, yet a 429 is safe to retry"} | {
        "chunk": False,
        "refresh": False,
        "create_nodes": False,
    }


def test_a_503_is_retried_for_a_write_with_an_id_and_raised_for_one_without(slept: list[float]) -> None:
    seen: list[httpx.Request] = []
    busy = httpx.Response(503, json={"detail": "engine busy"})
    brain = sync_client([busy, httpx.Response(202, json=TASK)], seen)
    assert brain.memories.add(content="x", memory_id="m1").task_id == "t1" and len(seen) == 2
    brain = sync_client([busy, httpx.Response(202, json=TASK)], seen := [])
    with pytest.raises(Unavailable) as raised:
        brain.memories.add(content="x")  # its id is derived: a second try could be a second write
    assert raised.value.status == 503 and raised.value.detail == "engine busy" and len(seen) == 1


def test_other_4xx_are_never_retried_and_a_422_names_the_field(slept: list[float]) -> None:
    seen: list[httpx.Request] = []
    unprocessable = httpx.Response(
        422, json={"detail": [{"loc": ["body", "memories", 3, "node_id"], "msg": "unknown node 'x'"}]}
    )
    brain = sync_client([httpx.Response(404, json={"detail": "memory not found"}), unprocessable], seen)
    with pytest.raises(NotFound):
        brain.memories.get("nope")
    with pytest.raises(InvalidRequest) as raised:
        brain.memories.add_many([{"content": "a", "memory_id": "a"}])
    assert raised.value.field == "memories.3.node_id" and "unknown node" in str(raised.value)
    assert len(seen) == 2 and not slept


def test_a_bad_value_is_refused_before_anything_is_sent() -> None:
    seen: list[httpx.Request] = []
    brain = sync_client([], seen)
    with pytest.raises(InvalidRequest) as raised:
        brain.recall("anything", limit=500)
    assert raised.value.field == "limit" and raised.value.status is None and not seen
    with pytest.raises(InvalidRequest) as raised:
        brain.memories.add(content="   ")
    assert raised.value.field == "content"  # one memory: its own field, as the API names it


def test_connection_errors_are_retried_then_raised(slept: list[float]) -> None:
    seen: list[httpx.Request] = []
    refused = httpx.ConnectError("connection refused")
    brain = sync_client([refused, refused, refused, refused, refused], seen)
    with pytest.raises(ConnectionFailed):
        brain.tasks.get("t1")
    assert len(seen) == 5 and len(slept) == 4  # the first try and 4 retries


def test_a_429_longer_than_the_client_waits_is_raised_with_its_retry_after(slept: list[float]) -> None:
    seen: list[httpx.Request] = []
    brain = sync_client([httpx.Response(429, json={"detail": "rate limit"}, headers={"Retry-After": "3600"})], seen)
    with pytest.raises(RateLimited) as raised:
        brain.recall("anything")
    assert raised.value.retry_after == 3600 and not slept


def test_the_async_client_retries_the_same_way(slept: list[float]) -> None:
    seen: list[httpx.Request] = []
    limited = httpx.Response(429, json={"detail": "rate limit"}, headers={"Retry-After": "1"})
    answers = [limited, httpx.Response(202, json=TASK)]

    async def run() -> str:
        http = httpx.AsyncClient(transport=httpx.MockTransport(scripted(answers, seen)))
        async with AsyncBrainClient("http://brain.test", api_key="k", http_client=http) as brain:
            out = await brain.memories.add(content="x")
        await http.aclose()
        return out.task_id

    assert asyncio.run(run()) == "t1" and len(seen) == 2 and slept and slept[0] >= 1
