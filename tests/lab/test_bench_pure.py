"""Pure pieces of the benchmarks: sizes, the mix, the workload, summaries and the knee."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from brain_lab.bench.corpus import Pool, corpus_rows, loaded_part, parse_size, size_label
from brain_lab.bench.load import PhaseResult, knee, per_second, ratio, summarize
from brain_lab.bench.workload import KINDS, build_workload, parse_mix
from brain_lab.eval.datasets import Memory


def _pool() -> Pool:
    mems = [
        (
            "t1",
            Memory(
                f"D1:{i}",
                f"Caroline: I went painting by the lake number {i}",
                "t1/session_1",
                datetime(2023, 5, 8, tzinfo=UTC),
            ),
        )
        for i in range(3)
    ] + [("t2", Memory("D1:1", "Mel: running a marathon in the rain", "t2/session_2"))]
    vecs = np.eye(4, 8, dtype=np.float32)
    return Pool(["t1", "t2"], mems, vecs, {"t1": ["What did Caroline paint?"], "t2": ["When did Mel run?"]})


def test_sizes_round_trip() -> None:
    assert parse_size("10k") == 10_000 and parse_size("100K") == 100_000 and parse_size("1m") == 1_000_000
    assert parse_size("2500") == 2500 and size_label(100_000) == "100k" and size_label(2500) == "2500"


def test_mix_is_normalised_and_strict() -> None:
    mix = parse_mix("auto=3,write=1")
    assert mix == {"auto": 0.75, "write": 0.25}
    with pytest.raises(ValueError):
        parse_mix("auto=1,typo=2")
    with pytest.raises(ValueError):
        parse_mix("auto=0")


def test_recycled_rows_keep_tenant_and_text_with_unit_noisy_vectors() -> None:
    pool = _pool()
    rows = list(corpus_rows(pool, 10, noise=0.01))
    assert len(rows) == 10
    ids = [m.memory_id for _, m, _ in rows]
    assert len(set(zip([t for t, _, _ in rows], ids, strict=True))) == 10  # (tenant, id) unique
    tenant, mem, vec = rows[4]  # replica 1 of the first memory
    assert tenant == "t1" and mem.memory_id == "D1:0~r1" and mem.content == pool.memories[0][1].content
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5
    assert 0.95 < float(vec @ pool.vectors[0]) < 1.0


def test_a_workload_drawn_from_a_partial_corpus_names_only_what_it_holds() -> None:
    pool = _pool()
    part = loaded_part(pool, 2)  # the corpus holds t1's first two memories only
    assert part.tenants == ["t1"] and len(part) == 2 and part.vectors.shape[0] == 2
    assert set(part.queries) == {"t1"}
    wl = build_workload(part, 200, parse_mix("nodes=1,write=1"), with_writes=True)
    assert {it.tenant for it in wl.items} == {"t1"}
    assert all(it.body.get("node_id", "t1/session_1") == "t1/session_1" for it in wl.items if it.kind == "write")
    assert loaded_part(pool, 10) is pool and loaded_part(pool, 0) is pool  # recycled copies; no corpus


def test_workload_follows_the_mix_and_skips_writes_without_the_route() -> None:
    mix = parse_mix("auto=1,focus=1,z_value=1,tiered=1,nodes=1,write=1")
    wl = build_workload(_pool(), 600, mix, with_writes=False)
    assert set(wl.counts) == set(KINDS) - {"write"}
    assert all(80 < n < 160 for n in wl.counts.values())
    for it in wl.items:
        if it.kind == "nodes":
            assert it.body["nodes"][0].startswith(it.tenant + "/")
        if it.kind == "auto":
            assert it.tier in ("exact", "precise", "balanced", "conceptual", "broad")
    writes = build_workload(_pool(), 200, mix, with_writes=True)
    assert writes.counts.get("write", 0) > 0
    assert build_workload(_pool(), 600, mix, with_writes=False).items == wl.items  # deterministic


def test_summary_percentiles_and_rps_are_exact() -> None:
    samples = [(100.0 + i * 0.1, "recall:auto", float(i + 1), i != 3) for i in range(11)]
    s = summarize(samples)
    assert s["requests"] == 11 and s["failures"] == 1
    assert s["p50"] == pytest.approx(6.0) and s["rps"] == pytest.approx(11 / 1.0)
    buckets = per_second(samples)
    assert [b["rps"] for b in buckets] == [10.0, 1.0]


def _phase(rps: float, p95: float, failures: int = 0) -> PhaseResult:
    return PhaseResult("service", 8, rps, 10, 100, failures, rps, p95 / 2, p95, p95 * 1.5, p95 / 2, (0, 0, 0))


def test_knee_is_the_fastest_step_within_the_limit_without_errors() -> None:
    steps = [_phase(10, 20), _phase(30, 45), _phase(50, 120), _phase(70, 400), _phase(60, 30, failures=2)]
    assert knee(steps, 50.0) is steps[1]
    assert knee(steps, 199.999) is steps[2]
    assert knee([_phase(10, 300)], 200) is None
    assert ratio(_phase(10, 30), _phase(10, 10)) == pytest.approx(3.0)
    assert ratio(_phase(10, 30), None) is None


def test_client_pool_holds_the_configured_connections() -> None:
    """opensearch-py ignores an unknown ``maxsize``: the pool must really be sized (found by the
    load test: a pool of one made every concurrent request open and discard a connection)."""
    from brain_search.config import load_settings
    from brain_search.store.client import make_client

    client = make_client(load_settings(opensearch_pool_size=24))
    conn = client.transport.connection_pool.connections[0]
    assert conn.maxsize == 24  # the engine connection's pool (store/http.py) keeps that many


def test_replicas_map_back_to_their_original_text() -> None:
    from brain_lab.bench.corpus import original_id, replica_id
    from brain_lab.bench.ef import texts_of

    assert original_id(replica_id("conv-3:D1:4", 17)) == "conv-3:D1:4"
    assert original_id("conv-3:D1:4") == "conv-3:D1:4"
    hits = [{"_source": {"memory_id": m}} for m in ("a", "a~r1", "a~r9", "b~r2")]
    assert texts_of(hits) == {"a", "b"}


def test_the_distinct_pool_splits_long_turns_and_abstracts_and_repeats_no_text() -> None:
    from brain_lab.bench.distinct import _distinct, paragraphs, sentences
    from brain_lab.eval.datasets import Memory

    long = "Intro line that is long enough to stand.\n\n- short\n- another item that is long enough to stand alone"
    assert paragraphs(long) == [
        "Intro line that is long enough to stand.",
        "- short\n- another item that is long enough to stand alone",
    ]
    assert sentences("First sentence is long enough here. Tiny. (Third) one is long enough too.") == [
        "First sentence is long enough here.",
        "(Third) one is long enough too.",
    ]
    rows = [("a", Memory("1", "Same  text")), ("b", Memory("2", "same text")), ("a", Memory("3", "other"))]
    assert [m.memory_id for _, m in _distinct(rows)] == ["1", "3"]


def test_the_bare_hybrid_is_one_routed_msearch_of_bm25_and_knn() -> None:
    import orjson
    from brain_lab.bench.cpu import bare_hybrid_payload

    lines = [orjson.loads(x) for x in bare_hybrid_payload([0.1, 0.2], "budget review", "t1", k=40).splitlines()]
    assert lines[0] == lines[2] == {"routing": "t1"}
    bm25, knn = lines[1], lines[3]
    assert bm25["size"] == knn["size"] == 40
    assert bm25["query"]["bool"]["must"] == [{"match": {"content.en": "budget review"}}]
    assert bm25["query"]["bool"]["filter"] == [{"term": {"tenant_id": "t1"}}]
    assert knn["query"]["knn"]["embedding"]["k"] == 40
    assert bm25["_source"] == knn["_source"] == ["memory_id", "content"]


def test_a_measured_call_waits_for_the_last_ones_spinning_threads() -> None:
    """``until_idle`` returns only once a window passes with (almost) no CPU: a pool of threads
    still spinning after the last call keeps it waiting, so that CPU is not the next call's."""
    from brain_lab.bench.cpu import until_idle

    burn = iter([0.0, 0.004, 0.008, 0.0101, 0.0102])  # CPU after each 10 ms window: 4, 4, 2.1, 0.1 ms
    slept: list[float] = []
    assert until_idle(cpu=lambda: next(burn), sleep=slept.append) == pytest.approx(0.0102)
    assert len(slept) == 4
    busy = iter(float(i) for i in range(1000))  # never idle: gives up at the cap
    assert until_idle(cpu=lambda: next(busy), sleep=lambda _s: None, cap_s=0.045) == pytest.approx(6.0)


def test_a_phase_reports_its_engine_requests_per_recall() -> None:
    from brain_lab.bench.load import cpu_text

    r = PhaseResult("service", 50, 50.0, 45.0, 100, 0, 50.0, 20, 60, 90, 25, (1.0, 1.0, 1.0))
    r.cpu_ms = {"api": 12.04}
    assert r.engine_requests_per_recall is None and cpu_text(r) == "api 12.0"
    r.engine_requests = {"1": 25, "2": 70, "3": 5}
    assert r.engine_requests_per_recall == pytest.approx(1.8)
    assert cpu_text(r) == "api 12.0; engine requests per recall 1.80"


def test_the_api_ratio_divides_by_the_engine_cpu_of_the_same_recalls() -> None:
    from brain_lab.bench.api_cost import PathFigure, summary

    figures = [
        PathFigure("engine only (the recall's _msearch)", 0.6, 4.7, 2.9),  # a cold node, measured first
        PathFigure("Retriever.recall", 1.5, 2.0, 3.0),
        PathFigure("AppState.recall (+ metrics, record)", 1.6, 2.1, 3.2),
        PathFigure("ASGI POST /v1/recall", 2.4, 2.5, 4.1),
        PathFigure("the web stack alone (a prepared answer)", 0.45, 0.0, 0.5),
    ]
    s = summary(figures)
    assert s["api_over_engine"] == pytest.approx(2.4 / 2.5)
    assert s["engine_cpu_ms"] == 2.5 and s["engine_only_cpu_ms"] == 4.7
    assert s["web_stack_ms"] == 0.45


def test_fair_ingest_helpers() -> None:
    from brain_lab.bench.fair_ingest import Phase, batch_texts, fifo_settings, percentile

    from brain_search.config import load_settings
    from brain_search.ingest.lanes import Lane, lane_for, should_yield

    assert percentile([3.0, 1.0, 2.0], 50) == 2.0 and percentile([1.0] * 19 + [9.0], 95) == 1.0
    assert percentile([float(i) for i in range(1, 21)], 95) == 19.0
    texts = batch_texts(1000)
    assert len(set(texts)) == 1000 and max(map(len, texts)) < 80
    off = fifo_settings(load_settings())
    assert lane_for(1, 0, off) is Lane.bulk  # one lane
    assert not should_yield(0, 9, 3600.0, off)  # a job runs whole
    p = Phase("x", [1.0, 2.0, 3.0])
    assert (p.p50, p.mean) == (2.0, 2.0)


def test_users_bench_layout_rows_and_questions() -> None:
    import numpy as np
    from brain_lab.bench.corpus import Pool
    from brain_lab.bench.users import UsersLayout, questions, user_rows
    from brain_lab.eval.datasets import Memory

    mems = [(c, Memory(f"{c}-{i}", f"turn {i} of {c}")) for c in ("conv-a", "conv-b") for i in range(7)]
    pool = Pool(["conv-a", "conv-b"], mems, np.eye(14, 8, dtype=np.float32), {"conv-a": ["q a?"], "conv-b": ["q b?"]})
    layout = UsersLayout(size=40, users=4)
    assert (layout.per_user, layout.documents) == (10, 40)
    rows = list(user_rows(pool, layout))
    assert len(rows) == 40 and len({m.memory_id for _, m, _ in rows}) == 40
    assert [k for k, _, _ in rows] == [k for k in range(4) for _ in range(10)]
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-5 for _, _, v in rows)  # noised copies, normalised
    assert rows[0][1].content == "turn 0 of conv-a" and rows[10][1].content == "turn 0 of conv-b"
    qs = questions(pool, layout, 3)
    assert len(qs) == 3 and len({k for k, _ in qs}) == 3 and qs == questions(pool, layout, 3)
    assert all(q == ("q a?" if k % 2 == 0 else "q b?") for k, q in qs)
