"""The frameworks' retrievers (``brain-search-client[langchain]``, ``[llamaindex]``) on the real
stack: each returns the memories of the recall it wraps, in its order, strict by default, with
the scores and Z in the metadata; through the framework's own entry points (``invoke`` /
``ainvoke``, ``retrieve`` / ``aretrieve``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from brain_search_client import AdminClient, AsyncBrainClient, BrainClient

from tests.conftest import ADMIN_KEY

pytestmark = pytest.mark.integration

NOTES = [
    ("lisbon-1", "The Lisbon offsite is in the second week of May"),
    ("lisbon-2", "We booked the Lisbon offsite venue near the river"),
    ("porto-1", "Porto has the better coffee, says Ana"),
    ("budget-1", "The marketing budget for Q3 is 40k"),
]
QUERIES = ("When is the Lisbon offsite?", "marketing budget", "the weather on Mars")


@pytest.fixture
def stocked(live_api: str) -> Iterator[tuple[str, str]]:
    with AdminClient(live_api, admin_key=ADMIN_KEY) as admin:
        admin.tenants.ensure("acme")
        key = admin.keys.create("acme", label="retrievers").key
    with BrainClient(live_api, api_key=key) as brain:
        brain.memories.add_many([{"memory_id": i, "content": c} for i, c in NOTES], wait=True)
    yield live_api, key


def _expected(brain: BrainClient, query: str) -> list[str]:
    return [r.memory_id for r in brain.recall(query, strict=True, limit=10).results]


def test_the_langchain_retriever_returns_the_recall_it_wraps(stocked: tuple[str, str]) -> None:
    pytest.importorskip("langchain_core", reason="langchain-core is not installed (pip install './client[langchain]')")
    from brain_search_client.retrievers.langchain import BrainRetriever

    url, key = stocked
    with BrainClient(url, api_key=key) as brain:
        retriever = BrainRetriever(client=brain)
        for query in QUERIES:
            docs = retriever.invoke(query)
            assert [d.id for d in docs] == _expected(brain, query), query
            for d in docs:
                assert d.metadata["memory_id"] == d.id and 0 <= d.metadata["z_position"] <= 1
                assert d.metadata["clears_floor"] and d.metadata["relevance"] > 0
        assert retriever.invoke("the weather on Mars") == []  # strict: nothing matched, nothing returned
        loose = BrainRetriever(client=brain, strict=False, limit=2).invoke("the weather on Mars")
        assert len(loose) == 2  # not strict: the nearest anyway
        assert [[d.id for d in b] for b in retriever.batch(list(QUERIES))] == [_expected(brain, q) for q in QUERIES]

        async def run() -> list[Any]:
            async with AsyncBrainClient(url, api_key=key) as aio:
                native = BrainRetriever(async_client=aio)
                return [await native.ainvoke(q) for q in QUERIES] + [await retriever.ainvoke(QUERIES[0])]

        got = asyncio.run(run())
        assert [[d.id for d in docs] for docs in got] == [_expected(brain, q) for q in (*QUERIES, QUERIES[0])]


def test_the_llamaindex_retriever_returns_the_recall_it_wraps(stocked: tuple[str, str]) -> None:
    pytest.importorskip(
        "llama_index.core", reason="llama-index-core is not installed (pip install './client[llamaindex]')"
    )
    from brain_search_client.retrievers.llamaindex import BrainRetriever

    url, key = stocked
    with BrainClient(url, api_key=key) as brain:
        retriever = BrainRetriever(brain)
        for query in QUERIES:
            found = retriever.retrieve(query)
            expected = brain.recall(query, strict=True, limit=10).results
            assert [n.node.node_id for n in found] == [r.memory_id for r in expected], query
            assert [n.score for n in found] == [r.scores.relevance for r in expected]
            assert all(
                n.node.metadata["z_position"] == r.scores.z_position for n, r in zip(found, expected, strict=True)
            )

        async def run() -> list[Any]:
            async with AsyncBrainClient(url, api_key=key) as aio:
                return [await BrainRetriever(async_client=aio).aretrieve(q) for q in QUERIES]

        got = asyncio.run(run())
        assert [[n.node.node_id for n in nodes] for nodes in got] == [_expected(brain, q) for q in QUERIES]
