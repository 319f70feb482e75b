"""Feedback's pure parts: the mean rating's interval, the share's interval, the summary read from
an aggregation answer, a recall's record (no memory text), marks replaced, and the recorder's
batching off the recall's path."""

from __future__ import annotations

import math
import threading
from datetime import UTC, datetime

import pytest

from brain_search.feedback import queries
from brain_search.feedback.recorder import RecallRecorder
from brain_search.feedback.records import apply_feedback, recall_record, record_doc_id, shown
from brain_search.feedback.summary import mean_interval, parse_summary, t95, wilson
from brain_search.models import (
    MemoryResult,
    NodeRef,
    QueryAnalysis,
    RecallRequest,
    RecallResponse,
    ResultMetadata,
    Scores,
    Tiers,
    Timings,
)


def test_t95_is_students_t() -> None:
    assert t95(1) == 12.706 and t95(4) == 2.776 and t95(30) == 2.042
    # beyond the table, the expansion is within 0.001 of the exact quantiles (t(40) 2.0211, t(120) 1.9799)
    assert abs(t95(40) - 2.0211) < 1e-3 and abs(t95(120) - 1.9799) < 1e-3
    assert t95(31) < t95(30) and t95(10_000) > 1.959
    with pytest.raises(ValueError):
        t95(0)


def test_mean_interval_of_ratings() -> None:
    ratings = [4, 5, 3, 4, 5]
    mean, low, high = mean_interval(len(ratings), sum(ratings), sum(r * r for r in ratings))
    # mean 4.2, sample sd 0.8367, se 0.3742, t(4) 2.776: 4.2 ± 1.0387, the top clipped to the scale
    assert mean == pytest.approx(4.2)
    assert low == pytest.approx(4.2 - 2.776 * math.sqrt(0.7 / 5), abs=1e-9) and low == pytest.approx(3.1613, abs=1e-4)
    assert high == 5.0
    ratings = [3, 4] * 50
    mean, low, high = mean_interval(100, sum(ratings), sum(r * r for r in ratings))
    half = t95(99) * math.sqrt((sum(r * r for r in ratings) - 350**2 / 100) / 99 / 100)
    assert (mean, low, high) == pytest.approx((3.5, 3.5 - half, 3.5 + half)) and 0.09 < half < 0.11
    assert mean_interval(3, 15, 75) == (5.0, 5.0, 5.0)  # all alike: no spread
    assert mean_interval(1, 2, 4) == (2.0, 1.0, 5.0)  # one rating: the whole scale
    assert mean_interval(0, 0, 0) == (None, None, None)


def test_wilson_interval_of_a_share() -> None:
    p, low, high = wilson(8, 10)
    assert p == 0.8 and low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 5)[1] == 0.0 and wilson(5, 5)[2] == 1.0
    assert wilson(0, 0) == (None, None, None)


def test_summary_from_an_aggregation_answer() -> None:
    aggs = {
        "kept": {"value": 7},
        "rating": {"count": 3, "sum": 12.0, "sum_of_squares": 50.0},
        "distribution": {"buckets": [{"key": k, "doc_count": 1} for k in (5, 3, 4)]},
        "marks": {
            "doc_count": 4,
            "relevant": {"doc_count": 3},
            "by_tier": {"buckets": [{"key": "exact_matches", "doc_count": 2, "relevant": {"doc_count": 2}}]},
        },
        "by_intent": {
            "buckets": [
                {"key": "exact", "doc_count": 3, "rating": {"count": 3, "sum": 12.0, "sum_of_squares": 50.0},
                 "marks": {"doc_count": 4, "relevant": {"doc_count": 3}}},
                {"key": "broad", "doc_count": 4, "rating": {"count": 0, "sum": None, "sum_of_squares": None},
                 "marks": {"doc_count": 0, "relevant": {"doc_count": 0}}},
            ]
        },
    }  # fmt: skip
    s = parse_summary(aggs)
    assert s["recalls_kept"] == 7
    assert s["rating"].count == 3 and s["rating"].mean == 4.0 and s["rating"].distribution == {"3": 1, "4": 1, "5": 1}
    assert s["rating"].low == pytest.approx(4.0 - 4.303 * math.sqrt(1.0 / 3))  # sd 1: (50 - 48) / 2
    assert s["relevant"].share == 0.75 and s["relevant_by_tier"]["exact_matches"].share == 1.0
    assert list(s["relevant_by_intent"]) == ["exact"]  # an intent without marks has no share
    assert list(s["rating_by_intent"]) == ["exact"]


def _result(mid: str, z: float) -> MemoryResult:
    return MemoryResult(
        id=mid,
        content=f"the secret text of {mid}",
        node=NodeRef(id="n1", label="Work"),
        scores=Scores(lexical=0.5, semantic=0.4, z_position=z, relevance=0.123456, match=0.9),
        metadata=ResultMetadata(),
    )


def _response() -> RecallResponse:
    qa = QueryAnalysis(detected_intent="exact", target_z=0.1, z_tolerance=0.2, confidence=0.9, lexical_query="x")
    a, b, c = _result("a", 0.05), _result("b", 0.8), _result("c", 0.45)
    return RecallResponse(
        results=[a, b], tiers=Tiers(exact_matches=[a], precise_matches=[c]), query_analysis=qa, timings=Timings()
    )


def test_a_recall_record_keeps_ids_and_numbers_never_text() -> None:
    resp = _response()
    req = RecallRequest(query="where did I say x", focus="exact", limit=2)
    doc = recall_record("t1", "rc_1", req, resp, at=datetime(2026, 1, 1, tzinfo=UTC))
    assert [(r["id"], r["rank"], r["tier"]) for r in doc["results"]] == [
        ("a", 1, "exact_matches"),
        ("b", 2, "conceptual_matches"),
        ("c", 3, "precise_matches"),  # shown in a tier though the list cut it
    ]
    assert doc["memory_ids"] == ["a", "b", "c"] and doc["results"][0]["relevance"] == 0.1235
    assert doc["request"] == {"focus": "exact", "limit": 2} and doc["query"] == "where did I say x"
    assert "secret text" not in repr(doc) and "lexical_query" not in doc["analysis"]
    assert [r.id for r, _ in shown(resp)] == ["a", "b", "c"]
    assert record_doc_id("t1", "rc_1") != record_doc_id("t2", "rc_1")


def test_feedback_replaces_the_rating_and_each_mark() -> None:
    resp = _response()
    doc = recall_record("t1", "rc_1", RecallRequest(query="q"), resp, at=datetime(2026, 1, 1, tzinfo=UTC))
    now = datetime(2026, 1, 2, tzinfo=UTC)
    doc |= apply_feedback(doc, 3, [("c", True), ("a", False)], now)
    doc |= apply_feedback(doc, None, [("a", True)], now)
    assert doc["rating"] == 3
    assert [(m["memory_id"], m["relevant"]) for m in doc["marks"]] == [("a", True), ("c", True)]
    with pytest.raises(KeyError):
        apply_feedback(doc, None, [("never-shown", True)], now)


def test_scrub_covers_the_memory_and_its_pieces() -> None:
    body = queries.scrub_body("t1", ["m1"])
    assert body["query"]["bool"]["filter"] == [{"term": {"tenant_id": "t1"}}]
    assert {"prefix": {"memory_ids": "m1#"}} in body["query"]["bool"]["should"]
    assert body["script"]["params"] == {"ids": ["m1"], "prefixes": ["m1#"]}


def test_the_recorder_batches_off_the_recall_path() -> None:
    written: list[list[tuple[str, dict]]] = []  # type: ignore[type-arg]
    gate = threading.Event()

    def write(batch: list[tuple[str, dict]]) -> tuple[int, int]:  # type: ignore[type-arg]
        gate.wait(5)
        written.append(batch)
        return len(batch), 0

    events: list[tuple[str, int]] = []
    rec = RecallRecorder(write, flush_s=0.05, max_pending=2)
    rec.set_events(lambda e, n: events.append((e, n)))
    r1 = rec.record("t1", RecallRequest(query="q"), _response())
    assert r1.recall_id and r1.recall_id.startswith("rc_") and rec.pending(r1.recall_id)  # returned before the write
    rec.record("t1", RecallRequest(query="q"), _response())
    rec.record("t1", RecallRequest(query="q"), _response())  # past max_pending: dropped, counted
    assert ("dropped", 1) in events
    gate.set()
    rec.flush_for(r1.recall_id)
    assert not rec.pending(r1.recall_id) and sum(len(b) for b in written) == 2
    rec.close()
    assert ("recorded", 2) in events or events.count(("recorded", 1)) == 2


def test_a_write_that_fails_is_counted_not_raised() -> None:
    def down(batch: list) -> tuple[int, int]:  # type: ignore[type-arg]
        raise ConnectionError("engine down")

    events: list[tuple[str, int]] = []
    rec = RecallRecorder(down, flush_s=10, max_pending=10)
    rec.set_events(lambda e, n: events.append((e, n)))
    rid = rec.record("t1", RecallRequest(query="q"), _response()).recall_id
    assert rid is not None
    rec.flush_for(rid)
    assert ("failed", 1) in events and not rec.pending(rid)
    rec.close()
