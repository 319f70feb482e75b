"""Request → job items: limits, node resolution, chunking, ids (a fake graph; no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from brain_search.config import load_settings
from brain_search.errors import InvalidInput, NotFound
from brain_search.graph.store import Node, derive_node_id, normalize_label
from brain_search.ingest.models import IngestRequest
from brain_search.ingest.prepare import prepare_items
from brain_search.store.documents import derive_memory_id

S = load_settings(
    ingest_max_batch=5, ingest_max_content_chars=100, ingest_chunk_chars=50, ingest_chunk_overlap_chars=10
)


class FakeGraph:
    def __init__(self, labels: list[str]) -> None:
        now = datetime.now(UTC)
        self.nodes = {lb: Node(id=derive_node_id(lb), label=lb, created_at=now, updated_at=now) for lb in labels}
        self.created: list[str] = []

    def get(self, tenant_id: str, ref: str) -> Node:
        for n in self.nodes.values():
            if ref in (n.id, n.label):
                return n
        raise NotFound("node", ref)

    def ensure(self, tenant_id: str, label: str, description: str | None = None) -> Node:
        label = normalize_label(label)
        self.created.append(label)
        now = datetime.now(UTC)
        self.nodes[label] = Node(id=derive_node_id(label), label=label, created_at=now, updated_at=now)
        return self.nodes[label]


def _req(**body: object) -> IngestRequest:
    return IngestRequest.model_validate(body)


def _field_of(req: IngestRequest, graph: FakeGraph | None = None) -> str:
    with pytest.raises(InvalidInput) as exc:
        prepare_items(req, "acme", S, graph or FakeGraph([]))
    return exc.value.field


def test_items_resolve_nodes_and_derive_ids() -> None:
    graph = FakeGraph(["a/b"])
    node = graph.nodes["a/b"]
    ts = datetime(2023, 5, 8, 13, 56)
    items = prepare_items(
        _req(memories=[{"content": "x", "node_id": "a/b", "timestamp": ts}, {"content": "y", "memory_id": "m2"}]),
        "acme",
        S,
        graph,
    )
    assert items[0].node_id == node.id and items[0].node_path == "a/b"
    assert items[0].timestamp == "2023-05-08T13:56:00+00:00"  # naive → UTC
    assert items[0].memory_id == derive_memory_id("x", node.id, items[0].timestamp)
    assert items[1].memory_id == "m2" and items[1].node_id is None


def test_limits_name_the_field() -> None:
    assert _field_of(_req(memories=[{"content": "x"}] * 6)) == "memories"
    assert _field_of(_req(memories=[{"content": "ok"}, {"content": "x" * 101}])) == "memories.1.content"
    deep = {"a": {"b": {"c": {"d": {"e": 1}}}}}
    assert _field_of(_req(memories=[{"content": "x", "metadata": deep}])) == "memories.0.metadata"
    big = {"k": "v" * 9000}
    assert _field_of(_req(memories=[{"content": "x", "metadata": big}])) == "memories.0.metadata"
    assert _field_of(_req(memories=[{"content": "x", "node_id": "no/such"}])) == "memories.0.node_id"
    dup = [{"content": "x", "memory_id": "m"}, {"content": "y", "memory_id": "m"}]
    assert _field_of(_req(memories=dup)) == "memories.1.memory_id"


def test_identical_memories_are_stored_once() -> None:
    items = prepare_items(_req(memories=[{"content": "same"}, {"content": "same"}]), "acme", S, FakeGraph([]))
    assert len(items) == 1


def test_create_nodes() -> None:
    graph = FakeGraph([])
    items = prepare_items(
        _req(memories=[{"content": "x", "node_id": "conv-26/session_3"}], create_nodes=True), "acme", S, graph
    )
    assert graph.created == ["conv-26/session_3"] and items[0].node_path == "conv-26/session_3"


def test_chunking_splits_long_content_into_overlapping_memories() -> None:
    text = " ".join(f"word{i}" for i in range(60))  # ~ 400 characters
    assert _field_of(_req(memories=[{"content": text, "memory_id": "doc"}])) == "memories.0.content"
    items = prepare_items(
        _req(memories=[{"content": text, "memory_id": "doc", "metadata": {"k": 1}}], chunk=True),
        "acme",
        S,
        FakeGraph([]),
    )
    assert [it.memory_id for it in items] == [f"doc#{n}" for n in range(len(items))]
    assert len(items) > 1 and all(len(it.content) <= 50 for it in items)
    assert items[1].metadata == {"k": 1, "chunk_of": "doc", "chunk_index": 1, "chunk_count": len(items)}
    short = prepare_items(_req(memories=[{"content": "short", "memory_id": "s"}], chunk=True), "acme", S, FakeGraph([]))
    assert [it.memory_id for it in short] == ["s"]
