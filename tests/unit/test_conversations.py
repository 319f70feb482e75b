"""Conversation context, the pure parts (issue 42, item 5): which conversation a memory is in,
when the context is on, how conversations are grouped and scored, the turns around a hit."""

from __future__ import annotations

import pytest

from brain_search.models import RecallRequest
from brain_search.retrieval.engine import queries
from brain_search.retrieval.intent import RegexIntentDetector
from brain_search.retrieval.score.conversations import (
    AUTO_CONTEXT,
    SUPPORT_WEIGHT,
    context_turns,
    conversation_key,
    conversation_score,
    group_conversations,
    turn_order,
    window,
)
from brain_search.store.scope import scope_filter


def src(mid: str, conv: str | None, node: str | None = "n", ts: str | None = None) -> dict[str, object]:
    return {"memory_id": mid, "conversation_id": conv, "node_id": node, "timestamp": ts}


def test_a_conversation_is_its_id_within_its_node() -> None:
    assert conversation_key(src("a", "c1", "n1")) == ("c1", "n1")
    assert conversation_key(src("a", "c1", None)) == ("c1", None)
    assert conversation_key(src("a", None)) is None
    assert conversation_key(src("a", "")) is None


@pytest.mark.parametrize(
    "query",
    [
        "What was that conversation about the Lisbon offsite?",
        "what did we discuss about the budget",
        "when we talked about moving to Berlin",
        "find the chat where Ben mentioned flights",
    ],
)
def test_a_conversation_cue_turns_the_context_on(query: str) -> None:
    cues = RegexIntentDetector().analyze(query).cues
    assert context_turns(None, cues) == AUTO_CONTEXT, cues
    assert context_turns(0, cues) == 0  # asked off
    assert context_turns(4, cues) == 4


@pytest.mark.parametrize("query", ["Lisbon offsite", 'Find where I said "53% for me"', "ideas related to growth"])
def test_other_queries_leave_it_off(query: str) -> None:
    assert context_turns(None, RegexIntentDetector().analyze(query).cues) == 0


def test_score_is_the_best_hit_plus_a_little_per_supporting_hit() -> None:
    assert conversation_score([]) == 0.0
    assert conversation_score([0.5]) == 0.5
    assert conversation_score([0.2, 0.5, 0.3]) == pytest.approx(0.5 + SUPPORT_WEIGHT * 0.5)
    # at most three supporting hits count
    assert conversation_score([0.5, 0.1, 0.1, 0.1, 0.1, 0.1]) == pytest.approx(0.5 + SUPPORT_WEIGHT * 0.3)


def test_grouping_ranks_conversations_and_keeps_hits_best_first() -> None:
    sources = [
        src("x1", "elsewhere", "a"),  # one strong word-sharing hit
        src("c1", "conv", "b"),
        src("c2", "conv", "b"),
        src("c3", "conv", "b"),
        src("same-id-other-node", "conv", "z"),
        src("loose", None),
    ]
    rel = [0.60, 0.58, 0.30, 0.25, 0.9, 0.95]
    order = sorted(range(len(rel)), key=lambda i: -rel[i])
    groups = group_conversations(sources, rel, order, limit=10)
    assert [g.key for g in groups] == [("conv", "z"), ("conv", "b"), ("elsewhere", "a")]
    conv = groups[1]
    assert conv.hits == ["c1", "c2", "c3"] and sources[conv.best]["memory_id"] == "c1"
    assert conv.score == pytest.approx(0.58 + SUPPORT_WEIGHT * 0.55)
    assert len(group_conversations(sources, rel, order, limit=1)) == 1


def test_turns_keep_the_order_they_were_said_in() -> None:
    # one time for a whole session (LoCoMo, RealMem): the ids' numbers order it
    assert turn_order("2023-05-08", "D3:2") < turn_order("2023-05-08", "D3:10")
    assert turn_order("2023-05-07", "D3:10") < turn_order("2023-05-08", "D3:2")
    assert turn_order(None, "a") < turn_order("2023-01-01", "a")
    turns = [src(f"D1:{i}", "c", ts="2023-05-08") for i in (10, 1, 3, 2, 5, 4, 11, 12)]
    assert [t["memory_id"] for t in window(turns, "D1:4", 2)] == ["D1:2", "D1:3", "D1:4", "D1:5", "D1:10"]
    assert [t["memory_id"] for t in window(turns, "D1:1", 1)] == ["D1:1", "D1:2"]
    assert [t["memory_id"] for t in window(turns, "D1:12", 0)] == ["D1:12"]
    assert [t["memory_id"] for t in window(turns, "gone", 1)] == ["D1:1", "D1:2", "D1:3"]


def test_the_turns_query_is_the_recalls_scope_plus_the_conversation() -> None:
    filters = scope_filter("alice", ["Work"])
    body = queries.conversation_turns(filters, "conv-1", "node-7", "2026-02-03T10:00:00+00:00", size=40, hidden=["old"])
    clauses = body["query"]["bool"]["filter"]
    assert clauses[0] == {"term": {"tenant_id": "alice"}}
    assert {"term": {"conversation_id": "conv-1"}} in clauses and {"term": {"node_id": "node-7"}} in clauses
    assert {"bool": {"must_not": [{"terms": {"memory_id": ["old"]}}]}} in clauses
    assert body["query"]["bool"]["should"][0]["distance_feature"]["origin"].startswith("2026-02-03")
    # the view from doc values, never a stored field (the record holds the vector)
    assert body["_source"] is False and body["stored_fields"] == "_none_" and "view_dv" in body["docvalue_fields"]
    assert body["size"] == 40 and body["track_total_hits"] is True
    no_node = queries.conversation_turns(filters, "conv-1", None, None, size=5)
    assert {"bool": {"must_not": [{"exists": {"field": "node_id"}}]}} in no_node["query"]["bool"]["filter"]
    assert "should" not in no_node["query"]["bool"]


def test_request_field_bounds() -> None:
    assert RecallRequest(query="q").context is None
    assert RecallRequest(query="q", context=5).context == 5
    for bad in (-1, 6):
        with pytest.raises(ValueError, match="context"):
            RecallRequest(query="q", context=bad)
