import pytest

from brain_search.config import load_settings
from brain_search.retrieval.engine.queries import knn_query
from brain_search.store.documents import build_memory_doc, derive_memory_id, memory_doc_id
from brain_search.store.scope import scope_filter
from brain_search.store.templates import memories_template


def test_memories_template_follows_settings() -> None:
    s = load_settings(index_prefix="x", shards=3, replicas=1, routing_partition_size=2, hnsw_m=24)
    body = memories_template(s, 384)
    assert body["index_patterns"] == ["x-memories-*"]
    idx = body["template"]["settings"]["index"]
    assert idx["number_of_shards"] == 3 and idx["number_of_replicas"] == 1 and idx["routing_partition_size"] == 2
    assert idx["number_of_routing_shards"] == 3  # else the partition has no effect on OpenSearch 3.5.0
    one = memories_template(load_settings(index_prefix="x", shards=3), 384)["template"]["settings"]["index"]
    assert "routing_partition_size" not in one and "number_of_routing_shards" not in one
    props = body["template"]["mappings"]["properties"]
    assert props["embedding"]["dimension"] == 384
    assert props["embedding"]["method"]["engine"] == "lucene"
    assert props["embedding"]["method"]["space_type"] == "cosinesimil"
    assert props["embedding"]["method"]["parameters"]["m"] == 24
    assert props["content"]["analyzer"] == "standard" and props["content"]["fields"]["en"]["analyzer"] == "english"
    assert body["template"]["mappings"]["_routing"] == {"required": True}
    assert idx["knn.derived_source.enabled"] is False  # k-NN 3.5.0.0's reader race (docs/operations.md)
    on = memories_template(load_settings(index_prefix="x", knn_derived_source=True), 384)
    assert on["template"]["settings"]["index"]["knn.derived_source.enabled"] is True


def test_routing_partition_must_be_below_shards() -> None:
    with pytest.raises(ValueError):
        memories_template(load_settings(shards=2, routing_partition_size=2), 384)


def test_doc_ids_are_deterministic_and_tenant_scoped() -> None:
    assert memory_doc_id("a", "m1") == memory_doc_id("a", "m1")
    assert memory_doc_id("a", "m1") != memory_doc_id("b", "m1")
    assert derive_memory_id("hi", "n", "2024-01-01") == derive_memory_id("hi", "n", "2024-01-01")
    assert derive_memory_id("hi", "n", "2024-01-01") != derive_memory_id("hi", "n", "2024-01-02")


def test_memory_doc_holds_text_and_vector() -> None:
    doc = build_memory_doc(
        tenant_id="t",
        memory_id="m",
        content="hello",
        embedding=[0.1, 0.2],
        embedding_model="mini",
        node_id="a/b",
    )
    assert doc["content"] == "hello" and doc["embedding"] == [0.1, 0.2] and doc["node_path"] == "a/b"
    assert "timestamp" not in doc


def test_scope_filter_exact_wire_format() -> None:
    f = scope_filter("t1", ["aiConnected/Brain/"], since="2024-01-01")
    assert f == [
        {"term": {"tenant_id": "t1"}},
        {"terms": {"node_path": ["aiConnected/Brain"]}},
        {"range": {"timestamp": {"gte": "2024-01-01"}}},
    ]
    q = knn_query([1, 2], 5, f, ef_search=3)
    assert q["knn"]["embedding"]["k"] == 5
    assert q["knn"]["embedding"]["method_parameters"] == {"ef_search": 5}
    assert q["knn"]["embedding"]["filter"] == {"bool": {"filter": f}}
