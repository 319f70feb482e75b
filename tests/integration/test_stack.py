"""The foundation against the real stack: OpenSearch + k-NN, Redis, the embedding model."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from brain_lab.eval.baselines import bm25_match, bm25_phrase
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.embedding import OnnxQueryEmbedder, SentenceTransformerEmbedder
from brain_search.encoders.factory import make_document_embedder
from brain_search.retrieval.engine.queries import knn_query
from brain_search.store.documents import build_memory_doc, memory_doc_id
from brain_search.store.scope import scope_filter
from brain_search.store.templates import derived_source

pytestmark = pytest.mark.integration

MEMORIES = [
    (
        "alice",
        "m1",
        "aiConnected/Brain/Architecture",
        "The equity split is 53% for me and 10% each for the others.",
    ),
    ("alice", "m2", "aiConnected/Web", "The landing page needs a darker hero section and a pricing table."),
    (
        "alice",
        "m3",
        "aiConnected/Brain",
        "Memory retrieval should distinguish exact quotes from broad themes.",
    ),
    (
        "bob",
        "m1",
        "aiConnected/Brain/Architecture",
        "Bob's equity notes: vesting over four years with a cliff.",
    ),
]


def _index(client: OpenSearch, index: str, embedder: SentenceTransformerEmbedder) -> None:
    vecs = embedder.encode([m[3] for m in MEMORIES])
    for (tenant, mid, node, text), vec in zip(MEMORIES, vecs, strict=True):
        doc = build_memory_doc(
            tenant_id=tenant,
            memory_id=mid,
            content=text,
            embedding=vec,
            embedding_model=embedder.name,
            node_id=node,
        )
        client.index(index=index, id=memory_doc_id(tenant, mid), body=doc, routing=tenant)
    client.indices.refresh(index=index)


def _ids(resp: dict) -> list[str]:
    return [h["_source"]["memory_id"] for h in resp["hits"]["hits"]]


def test_template_installed(client: OpenSearch, stack_settings: Settings, memories_index: str) -> None:
    tpl = client.indices.get_index_template(name=f"{stack_settings.index_prefix}-memories")
    assert tpl["index_templates"][0]["index_template"]["index_patterns"] == [
        f"{stack_settings.index_prefix}-memories-*"
    ]
    mapping = client.indices.get_mapping(index=stack_settings.memories_alias)[memories_index]["mappings"]
    emb = mapping["properties"]["embedding"]
    assert emb["type"] == "knn_vector" and emb["dimension"] == 384
    assert emb["method"]["engine"] == "lucene"
    assert mapping["properties"]["content"]["fields"]["en"]["analyzer"] == "english"
    plugins = {p["component"] for p in client.cat.plugins(format="json")}
    assert "opensearch-knn" in plugins
    # the vector is stored in _source, not derived from the vector files on fetch (k-NN 3.5.0.0's race)
    assert derived_source(client, memories_index) is False


def test_bm25_match_and_phrase(client: OpenSearch, stack_settings: Settings, memories_index: str, embedder) -> None:
    _index(client, memories_index, embedder)
    f = scope_filter("alice")
    alias = stack_settings.memories_alias
    r = client.search(index=alias, body={"query": bm25_match("equity split", f)}, routing="alice")
    assert _ids(r) == ["m1"]
    r = client.search(index=alias, body={"query": bm25_phrase("53% for me", f)}, routing="alice")
    assert _ids(r) == ["m1"]
    r = client.search(index=alias, body={"query": bm25_phrase("for me 53%", f)}, routing="alice")
    assert _ids(r) == []


def test_knn_respects_tenant(client: OpenSearch, stack_settings: Settings, memories_index: str, embedder) -> None:
    _index(client, memories_index, embedder)
    vec = embedder.encode(["how is ownership of the company divided"])[0]
    alias = stack_settings.memories_alias
    r = client.search(index=alias, body={"query": knn_query(vec, 3, scope_filter("alice")), "size": 3})
    assert _ids(r)[0] == "m1"
    assert {h["_source"]["tenant_id"] for h in r["hits"]["hits"]} == {"alice"}
    r = client.search(index=alias, body={"query": knn_query(vec, 3, scope_filter("bob")), "size": 3})
    assert _ids(r) == ["m1"] and r["hits"]["hits"][0]["_source"]["tenant_id"] == "bob"
    r = client.search(index=alias, body={"query": knn_query(vec, 3, scope_filter("carol")), "size": 3})
    assert _ids(r) == []


def test_knn_restricted_to_node_subtree(
    client: OpenSearch, stack_settings: Settings, memories_index: str, embedder
) -> None:
    _index(client, memories_index, embedder)
    vec = embedder.encode(["landing page design and equity"])[0]
    alias = stack_settings.memories_alias
    r = client.search(
        index=alias,
        body={"query": knn_query(vec, 10, scope_filter("alice", ["aiConnected/Brain"])), "size": 10},
    )
    assert sorted(_ids(r)) == ["m1", "m3"]
    r = client.search(
        index=alias,
        body={"query": knn_query(vec, 10, scope_filter("alice", ["aiConnected/Web"])), "size": 10},
    )
    assert _ids(r) == ["m2"]
    r = client.search(
        index=alias,
        body={"query": knn_query(vec, 10, scope_filter("alice", ["aiConnected/Bra"])), "size": 10},
    )
    assert _ids(r) == []


def test_redis_is_real(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    assert r.ping()
    r.set("brain-test-key", "v")
    assert r.get("brain-test-key") == b"v"
    assert int(r.info("server")["redis_version"].split(".")[0]) >= 6


def test_onnx_and_torch_give_the_same_vector(settings: Settings, embedder: SentenceTransformerEmbedder) -> None:
    torch_embedder = SentenceTransformerEmbedder(settings.models_dir, "torch")
    assert embedder.backend == "onnx", "ONNX should load on this machine"
    s = ["Find where I said '53% equity'", "ideas related to building teams"]
    a, b = embedder.encode(s), torch_embedder.encode(s)
    assert a.shape == (2, 384)
    assert np.abs(a - b).max() < 1e-4
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)


def test_query_encoder_matches_sentence_transformers(settings: Settings, embedder: SentenceTransformerEmbedder) -> None:
    """The API's direct ONNX encoder gives sentence-transformers' vectors (batches padded to
    their longest text); its int8 model stays close (the quality figures: lab/reports/performance.md)."""
    s = ["Find where I said '53% equity'", "ideas", "What did Caroline research about adoption agencies last May?"]
    fp32 = OnnxQueryEmbedder(settings.models_dir, quantized=False)
    int8 = OnnxQueryEmbedder(settings.models_dir, quantized=True)
    ref = embedder.encode(s)
    assert fp32.backend == "onnx" and int8.backend == "onnx-int8"
    assert np.abs(fp32.encode(s) - ref).max() < 1e-5
    assert np.abs(np.vstack([fp32.encode([t]) for t in s]) - ref).max() < 1e-5
    q = int8.encode(s)
    assert q.shape == (3, 384) and q.dtype == np.float32
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-4)
    assert ((q * ref).sum(axis=1) > 0.98).all()
    assert fp32.encode([]).shape == (0, 384)
    chunked = OnnxQueryEmbedder(settings.models_dir, batch_size=2)  # sorted by length, batches of 2
    assert np.abs(chunked.encode(s * 3) - np.vstack([ref] * 3)).max() < 1e-5


def test_document_embedder_matches_sentence_transformers(
    settings: Settings, embedder: SentenceTransformerEmbedder
) -> None:
    """What the worker embeds memories with: onnxruntime directly, fp32, sentence-transformers'
    vectors, a memory past the model's 256 word pieces truncated the same way."""
    long = " ".join(f"word{i} about the quarterly plan" for i in range(120))
    s = ["Find where I said '53% equity'", long, "ok", "What did Caroline research about adoption agencies?"] * 20
    ref = embedder.encode(s)
    for sessions in (1, 3):  # 3 sessions share out the 5 batches of 16 between them
        doc = make_document_embedder(settings, sessions=sessions)
        assert isinstance(doc, OnnxQueryEmbedder) and not doc.quantized
        assert doc.name == embedder.name and doc.dimension == embedder.dimension
        assert np.abs(doc.encode(s) - ref).max() < 1e-5
        assert np.abs(doc.encode(s[:5]) - ref[:5]).max() < 1e-5
