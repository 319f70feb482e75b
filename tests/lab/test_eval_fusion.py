"""Client-side fusion must match OpenSearch's normalization-processor (min_max + arithmetic_mean)
and RRF, edge cases included."""

import pytest
from brain_lab.eval.fusion import MIN_SCORE, Hit, min_max_fuse, min_max_normalize, rrf_fuse


def test_min_max_normalize_like_opensearch() -> None:
    # the minimum becomes 0.001 (never 0), the maximum 1
    assert min_max_normalize([10.0, 5.0, 0.0]) == [1.0, 0.5, MIN_SCORE]
    # one hit, or all equal: every hit scores 1.0
    assert min_max_normalize([3.2]) == [1.0]
    assert min_max_normalize([2.0, 2.0]) == [1.0, 1.0]
    assert min_max_normalize([]) == []


def test_min_max_fuse_counts_absent_as_zero_with_weight() -> None:
    bm25 = [Hit("a", 10.0), Hit("b", 6.0), Hit("c", 2.0)]
    knn = [Hit("b", 0.9), Hit("d", 0.8), Hit("a", 0.7)]
    fused = {h.memory_id: h.score for h in min_max_fuse([bm25, knn], [0.5, 0.5])}
    # a: bm25 1.0, knn 0.001 → 0.5005; b: 0.5 and 1.0 → 0.75; c: 0.001 only → 0.0005; d: 0.5 only → 0.25
    assert fused["a"] == pytest.approx(0.5005)
    assert fused["b"] == pytest.approx(0.75)
    assert fused["c"] == pytest.approx(0.0005)
    assert fused["d"] == pytest.approx(0.25)
    assert [h.memory_id for h in min_max_fuse([bm25, knn], [0.5, 0.5])] == ["b", "a", "d", "c"]


def test_min_max_weights_and_errors() -> None:
    bm25 = [Hit("a", 2.0), Hit("b", 1.0)]
    knn = [Hit("b", 0.9), Hit("a", 0.1)]
    assert [h.memory_id for h in min_max_fuse([bm25, knn], [0.9, 0.1])] == ["a", "b"]
    assert [h.memory_id for h in min_max_fuse([bm25, knn], [0.1, 0.9])] == ["b", "a"]
    with pytest.raises(ValueError):
        min_max_fuse([bm25, knn], [1.0])


def test_fusion_ties_keep_first_seen_order() -> None:
    fused = min_max_fuse([[Hit("x", 1.0)], [Hit("y", 1.0)]])
    assert [h.memory_id for h in fused] == ["x", "y"]


def test_rrf_by_hand() -> None:
    a = [Hit("p", 9.0), Hit("q", 8.0)]
    b = [Hit("q", 0.9), Hit("r", 0.8)]
    fused = {h.memory_id: h.score for h in rrf_fuse([a, b], 60)}
    assert fused["q"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["p"] == pytest.approx(1 / 61)
    assert fused["r"] == pytest.approx(1 / 62)
    assert [h.memory_id for h in rrf_fuse([a, b], 60)] == ["q", "p", "r"]


def test_engine_candidates_ask_one_msearch_with_every_sub_search() -> None:
    import numpy as np
    from brain_lab.eval.baselines import EngineCandidates, baseline_systems

    from brain_search.config import load_settings

    class _Client:
        def __init__(self) -> None:
            self.bodies: list[list[dict]] = []
            self.indices: list[str] = []

        def msearch(self, body: list[dict], index: str) -> dict:
            self.bodies.append(body)
            self.indices.append(index)
            hits = [{"_source": {"memory_id": m}, "_score": s} for m, s in (("a", 3.0), ("b", 1.0))]
            knn = [{"_source": {"memory_id": m}, "_score": s} for m, s in (("b", 0.9), ("c", 0.8))]
            return {"responses": [{"hits": {"hits": hits}}, {"hits": {"hits": hits}}, {"hits": {"hits": knn}}]}

    class _Emb:
        name, dimension = "fake", 2

        def encode(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)

    client = _Client()
    s = load_settings(index_prefix="x")
    cand = EngineCandidates(client, s, _Emb(), depth=7)  # type: ignore[arg-type]
    systems = {sys.name: sys for sys in baseline_systems(cand, "content")}
    assert systems["BM25 (content)"].search("t1", "q", 10) == ["a", "b"]
    assert systems["kNN"].search("t1", "q", 1) == ["b"]
    assert systems["min-max 0.5/0.5 (content)"].search("t1", "q", 10) == ["b", "a", "c"]
    assert systems["RRF k=60 (content)"].search("t1", "q", 10) == ["b", "a", "c"]
    assert len(client.bodies) == 1  # every baseline served from one request
    body = client.bodies[0]
    assert client.indices == ["x-memories"]  # the index only in the path (allow_explicit_index: false)
    assert body[0] == {"routing": "t1"}
    assert body[1]["size"] == 7 and body[1]["query"]["bool"]["must"][0] == {"match": {"content": {"query": "q"}}}
    assert body[1]["query"]["bool"]["filter"] == [{"term": {"tenant_id": "t1"}}]
    assert body[3]["query"]["bool"]["must"][0] == {"match": {"content.en": {"query": "q"}}}
    assert body[5]["query"]["knn"]["embedding"]["k"] == 7
