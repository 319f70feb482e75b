"""Pure pieces of the shared-index benchmarks (`bench shards`, `bench tenants`): layouts, what the
shared index holds, question sampling, rotation, answer agreement and the background CPU."""

from __future__ import annotations

import numpy as np
import pytest
from brain_lab.bench.corpus import Pool
from brain_lab.bench.shards import PathCost, agreement, background_rate, big_questions, rotated
from brain_lab.bench.shared import (
    ShardLayout,
    SharedLayout,
    parse_layouts,
    reindexed,
    shared_rows,
    source_conversation,
    tenant_rows,
)
from brain_lab.bench.tenants import lone_tenant, rss_kib, small_questions, tenant_ids
from brain_lab.eval.datasets import Memory


def _pool() -> Pool:
    mems = [("c1", Memory(f"D1:{i}", f"one {i}")) for i in range(5)]
    mems += [("c2", Memory(f"D2:{i}", f"two {i}")) for i in range(3)]
    vecs = np.eye(8, 8, dtype=np.float32)
    return Pool(["c1", "c2"], mems, vecs, {"c1": ["q1a", "q1b", "q1c"], "c2": ["q2a"]})


def test_layouts_parse_with_partition_and_routing_shards() -> None:
    assert parse_layouts("1, 3,12:3,12:3+") == [
        ShardLayout(1),
        ShardLayout(3),
        ShardLayout(12, 3),
        ShardLayout(12, 3, True),
    ]
    assert ShardLayout(12, 3, True).slug == "12s3pr" and ShardLayout(1).slug == "1s1p"
    assert "routing shards 12" in ShardLayout(12, 3, True).label
    for bad in ("3:3", "2:4", "0", ""):
        with pytest.raises(ValueError):
            parse_layouts(bad)


def test_shared_layout_fills_the_size_with_small_tenants() -> None:
    layout = SharedLayout(1_000_000)
    assert layout.small_tenants == 9_900 and layout.documents == 1_000_000
    assert SharedLayout(5_000).small_tenants == 0  # the big tenants alone are larger
    small = SharedLayout(25, big_tenants=2, big_size=7, small_size=3)
    assert small.small_tenants == 3 and small.documents == 23


def test_rows_per_tenant_and_their_conversation() -> None:
    layout = SharedLayout(25, big_tenants=2, big_size=7, small_size=3)
    rows = list(tenant_rows(layout, ["c1", "c2"]))
    assert len(rows) == layout.documents
    assert rows[0] == ("big-00", "c1", 0, True) and rows[7] == ("big-01", "c2", 0, True)
    small = [r for r in rows if not r[3]]
    assert [r[0] for r in small[::3]] == ["small-00000", "small-00001", "small-00002"]
    assert small[6] == ("small-00002", "c1", 3, False)  # the next slice of the conversation
    assert source_conversation("small-00003", ["c1", "c2"]) == "c2"
    assert source_conversation("big-01", ["c1", "c2"]) == "c2"
    with pytest.raises(ValueError):
        source_conversation("acme", ["c1"])


def test_shared_rows_recycle_with_unique_ids_and_unit_vectors() -> None:
    pool = _pool()
    layout = SharedLayout(25, big_tenants=2, big_size=7, small_size=3)
    rows = list(shared_rows(pool, layout))
    keys = [(t, m.memory_id) for t, m, _ in rows]
    assert len(set(keys)) == len(rows) == layout.documents
    assert keys[5] == ("big-00", "D1:0~r1")  # past the conversation's 5 turns: a copy
    _, first, vec = rows[0]
    assert first.memory_id == "D1:0" and np.allclose(vec, pool.vectors[0])  # a big tenant's first copy: as is
    for _, _, v in rows:
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    assert list(shared_rows(pool, layout))[20][1] == rows[20][1]  # fixed order and ids


def test_questions_are_the_tenants_conversations_and_fixed() -> None:
    pool = _pool()
    layout = SharedLayout(25, big_tenants=2, big_size=7, small_size=3)
    qs = big_questions(pool, layout, 10)
    assert sorted(qs) == [("big-00", "q1a"), ("big-00", "q1b"), ("big-00", "q1c"), ("big-01", "q2a")]
    assert big_questions(pool, layout, 10) == qs
    small = small_questions(pool, layout, 20)
    assert len(small) == 20 and small == small_questions(pool, layout, 20)
    for tenant, q in small:
        assert q in pool.queries[source_conversation(tenant, ["c1", "c2"])]
    assert lone_tenant("small-00002", ["c1", "c2"]) == "small-00000"
    assert lone_tenant("small-00003", ["c1", "c2"]) == "small-00001"


def test_rotation_agreement_and_background() -> None:
    assert rotated([1, 2, 3], 4) == [2, 3, 1] and rotated([], 2) == []
    assert agreement([["a", "b"], ["c"]], [["a", "b"], ["c", "d"]]) == 1
    idle = PathCost("idle", n=2, engine_ms=6.0, walls=[10.0, 20.0])
    assert background_rate(idle) == pytest.approx(0.2)
    assert background_rate(PathCost("none")) == 0.0
    cost = PathCost("p", n=2, engine_ms=20.0, walls=[10.0, 30.0])
    fig = cost.figures(background_rate(idle))
    assert fig["engine_cpu_ms"] == 10.0 and fig["engine_cpu_net_ms"] == pytest.approx((20.0 - 8.0) / 2)
    assert fig["p50_ms"] == 20.0


def test_rss_and_tenant_ids() -> None:
    assert rss_kib("Name:\tpython\nVmRSS:\t  123456 kB\nVmSwap: 0 kB\n") == 123456
    with pytest.raises(ValueError):
        rss_kib("Name: x\n")
    assert tenant_ids(4) == ["small-00000", "small-00001", "small-00002", "small-00003"]


def test_reindex_progress_counts_the_slices() -> None:
    assert reindexed({"created": 5, "updated": 1}) == 6
    assert reindexed({"created": 0, "slices": [{"created": 3, "updated": 0}, None, {"created": 4}]}) == 7
