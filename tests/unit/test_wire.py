"""The wire: the exact ``_msearch`` a recall sends (issue 44 item 3). A change of any query body
shows here first. The engine is a fake that records the NDJSON and answers with no hits."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from brain_search.config import Settings
from brain_search.models import RecallRequest
from brain_search.retrieval.engine.queries import BM25_SCRIPT
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.plan import request_vector
from tests.unit.fakes import NoOwnIndices

VECTOR = [float(x) for x in np.full(384, 1 / np.sqrt(384), dtype=np.float32)]


class Encoder:
    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        return np.asarray(VECTOR, dtype=np.float32)


class Engine:
    """Records each ``_msearch`` and answers: counts for a counts item (``df`` 1 and 30, 40
    memories of 5 words), no hits otherwise."""

    indices = NoOwnIndices()

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def msearch(self, body: str, index: str) -> dict[str, Any]:
        self.sent.append((index, body))
        items = [orjson.loads(line) for line in body.strip().split("\n")][1::2]
        out: list[dict[str, Any]] = []
        for item in items:
            answer: dict[str, Any] = {"_shards": {"total": 1, "successful": 1}}
            answer["hits"] = {"total": {"value": 40 if "aggs" in item else 0, "relation": "eq"}, "hits": []}
            if "aggs" in item:
                buckets = {str(i): {"doc_count": df} for i, df in enumerate([1, 30])}
                answer["aggregations"] = {"df": {"buckets": buckets}, "len": {"count": 40, "sum": 200.0}}
            out.append(answer)
        return {"responses": out}


def _marked(o: Any) -> Any:
    """The query vector as ``"VECTOR"`` (384 floats, checked: the float32 values, each in its
    shortest form, ``pipeline.request_vector``) and the BM25 script as
    ``"BM25_SCRIPT"`` (``queries.BM25_SCRIPT``), so the bodies read."""
    if o == BM25_SCRIPT:
        return "BM25_SCRIPT"
    if isinstance(o, dict):
        return {k: _marked(v) for k, v in o.items()}
    if isinstance(o, list):
        if len(o) == len(VECTOR) and all(isinstance(x, float) for x in o):
            assert np.array_equal(np.asarray(o, dtype=np.float32), np.asarray(VECTOR, dtype=np.float32))
            assert o == request_vector(np.asarray(VECTOR, dtype=np.float32))
            return "VECTOR"
        return [_marked(v) for v in o]
    return o


def test_a_recall_sends_exactly_this_msearch() -> None:
    engine = Engine()
    retriever = Retriever(engine, Settings(), Encoder())  # type: ignore[arg-type]
    req = RecallRequest(query="zzqx budget", limit=3)
    retriever.recall("t1", req)  # the tenant's words not counted yet: a count first
    assert len(engine.sent) == 2
    retriever.recall("t1", req)  # counted: the count rides in the recall's one _msearch
    assert len(engine.sent) == 3
    index, body = engine.sent[-1]
    assert index == "brain-memories"
    assert body.endswith("\n")
    lines = [_marked(orjson.loads(x)) for x in body.strip().split("\n")]
    assert lines == EXPECTED, lines


def _term(word: str, idf: float, name: str) -> dict[str, Any]:
    """The tenant's BM25 of one query word (``queries.tenant_bm25_clause``)."""
    params = {"idf": idf, "avgdl": 5.0, "k1": 1.2, "b": 0.2}  # short memories: b 0.2 (queries.bm25_b)
    match = {"match": {"content.tf": {"query": word, "operator": "and"}}}
    return {"script_score": {"query": match, "script": {"source": "BM25_SCRIPT", "params": params}, "_name": name}}


# the same clause scores the BM25 sub-search and, as a should, the kNN one
TENANT_BM25 = {
    "bool": {
        "should": [_term("zzqx", 3.31, "t0"), _term("budget", 0.296, "t1")],
        "minimum_should_match": 1,
    }
}
SCOPE = [
    {"term": {"tenant_id": "t1"}},
    {
        "bool": {
            "should": [
                {"bool": {"must_not": [{"exists": {"field": "valid_until"}}]}},
                {"range": {"valid_until": {"gt": "now"}}},
            ],
            "minimum_should_match": 1,
        }
    },
]
# what both sub-searches fetch per hit: the stored view, the node path's doc value, the cosine
FETCH = {
    "size": 30,
    "_source": False,
    "stored_fields": "_none_",
    "docvalue_fields": ["view_dv", "memory_id", "node_path.raw"],
    "script_fields": {
        "cosine": {"script": {"source": "cosineSimilarity(params.q, doc['embedding'])", "params": {"q": "VECTOR"}}}
    },
}
KNN = {
    "knn": {
        "embedding": {
            "vector": "VECTOR",
            "k": 30,
            "filter": {"bool": {"filter": SCOPE}},
            "method_parameters": {"ef_search": 100},
        }
    }
}

# header and body of each sub-search, each routed to the tenant's shards: BM25 (the tenant's, per
# term), kNN (BM25 as a should), the superseders, then the tenant's counts riding along
EXPECTED: list[dict[str, Any]] = [
    {"search_type": "query_then_fetch", "routing": "t1"},
    {**FETCH, "query": {"bool": {"must": [TENANT_BM25], "filter": SCOPE}}},
    {"search_type": "query_then_fetch", "routing": "t1"},
    {**FETCH, "query": {"bool": {"filter": [KNN], "should": [TENANT_BM25]}}},
    {"search_type": "query_then_fetch", "routing": "t1"},
    {
        "query": {"bool": {"filter": [{"term": {"tenant_id": "t1"}}, {"exists": {"field": "supersedes"}}]}},
        "size": 200,
        "track_total_hits": 201,
        "_source": False,
        "docvalue_fields": ["memory_id", "supersedes"],
    },
    {"routing": "t1"},
    {
        "size": 0,
        "track_total_hits": True,
        "query": {"bool": {"filter": [{"term": {"tenant_id": "t1"}}]}},
        "aggs": {
            "len": {"stats": {"field": "content.len"}},
            "df": {
                "filters": {
                    "filters": {
                        "0": {"match": {"content.en": {"query": "zzqx", "operator": "and"}}},
                        "1": {"match": {"content.en": {"query": "budget", "operator": "and"}}},
                    }
                }
            },
        },
    },
]


def test_the_query_vector_travels_as_its_float32_values_in_short() -> None:
    rng = np.random.default_rng(7)
    vec = rng.standard_normal(384).astype(np.float32)
    vec /= np.linalg.norm(vec)
    wire = request_vector(vec)
    assert np.array_equal(np.asarray(wire, dtype=np.float32), vec)  # the engine reads float32: the same vector
    assert len(orjson.dumps(wire)) < 0.7 * len(orjson.dumps(vec.tolist()))
