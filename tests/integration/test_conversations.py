"""Conversation context (issue 42, item 5): "what was that conversation about X" brings back the
conversation — its other turns, which share no word with the query, come with the hit — not only
memories from elsewhere that share one word."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.seed import Mem, seed_memories

pytestmark = pytest.mark.integration

T0 = datetime(2026, 2, 3, 10, 0, tzinfo=UTC)
OFFSITE = [  # one conversation, one node, a minute apart
    ("t1", "Maya: Should we hold the team offsite in Lisbon this spring?"),
    ("t2", "Ben: I like it. Flights from Berlin are cheap in April."),
    ("t3", "Maya: Then let's book the venue by the river for three days."),
    ("t4", "Ben: I'll ask finance to approve the budget first."),
    ("t5", "Maya: Great, invites go out after Easter."),
]
ELSEWHERE = [  # other nodes and conversations, each sharing one word with the question
    ("food", "Personal/Food", "conv-food", "Lisbon has the best custard tarts I ever ate."),
    ("tram", "Reading", "conv-tram", "An article on the history of the Lisbon tram lines."),
    ("backup", "Home/IT", "conv-it", "The offsite backup drive needs replacing soon."),
    ("trip", "Personal/Travel", None, "Packing list for the Lisbon weekend: sunscreen, charger."),
]
QUESTION = "What was that conversation about the Lisbon offsite?"


def seed_offsite(client: Any, settings: Any, embedder: Any, tenant: str = "alice") -> None:
    """The offsite conversation (node Work/Team, ``conv-offsite``) and the memories from elsewhere."""
    mems = [
        Mem(tenant, mid, text, "Work/Team", "Work/Team", T0 + timedelta(minutes=i), conversation_id="conv-offsite")
        for i, (mid, text) in enumerate(OFFSITE)
    ]
    mems += [
        Mem(tenant, mid, text, node, node, T0 - timedelta(days=3 + i), conversation_id=conv)
        for i, (mid, node, conv, text) in enumerate(ELSEWHERE)
    ]
    seed_memories(client, settings, embedder, mems)


def recall(api: Any, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    r = api.post("/v1/recall", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


@pytest.fixture
def alice(api, make_tenant, client, embedder):  # type: ignore[no-untyped-def]
    headers = make_tenant("alice")
    seed_offsite(client, api.app.state.brain.settings, embedder)
    return headers


def _tiered_ids(out: dict[str, Any]) -> set[str]:
    return {r["id"] for tier in out["tiers"].values() for r in tier}


def test_that_conversation_about_brings_back_the_conversation(api, alice) -> None:
    out = recall(api, alice, query=QUESTION, tiered=True)
    # the issue: the tiers hold the word-sharing memories from elsewhere, the conversation's other
    # turns (no word of the question) stay below the floor
    assert {"t3", "t4"}.isdisjoint(_tiered_ids(out))
    convs = out["conversations"]
    assert convs, "a conversation cue turns the context on"
    first = convs[0]
    assert first["conversation_id"] == "conv-offsite"
    assert first["node"]["label"] == "Work/Team"
    assert first["best_hit"] == "t1" and first["hits"][0] == "t1"
    assert first["turns_total"] == 5
    # the best hit and two turns either side of it, in the order they were said
    assert [t["id"] for t in first["turns"]] == ["t1", "t2", "t3"]
    times = [t["timestamp"] for t in first["turns"]]
    assert times == sorted(times)
    assert next(t for t in first["turns"] if t["id"] == "t1")["hit"] is True
    assert "venue by the river" in first["turns"][2]["content"]
    # every other conversation is one of the tenant's, none mixes in a turn of another
    ids = {t["id"] for c in convs for t in c["turns"]}
    assert ids <= {m for m, _ in OFFSITE} | {m for m, *_ in ELSEWHERE}
    assert all(c["conversation_id"] != "None" for c in convs)
    assert out["timings"]["context_ms"] > 0


def test_context_is_opt_in_and_bounded(api, alice, make_tenant, client, embedder) -> None:
    # another tenant's turns under the same conversation id are never context
    bob = make_tenant("bob")
    seed_memories(
        client,
        api.app.state.brain.settings,
        embedder,
        [Mem("bob", "b1", "Bob: secret offsite plans", "Work/Team", "Work/Team", T0, conversation_id="conv-offsite")],
    )
    # no conversation cue, no context asked: the default recall, no conversations
    plain = recall(api, alice, query="Lisbon offsite")
    assert plain["conversations"] is None and plain["timings"]["context_ms"] == 0.0
    # asked for: the whole conversation around its best hit (five turns, at most five each side)
    out = recall(api, alice, query="Lisbon offsite", context=5)
    offsite = next(c for c in out["conversations"] if c["conversation_id"] == "conv-offsite")
    assert [t["id"] for t in offsite["turns"]] == ["t1", "t2", "t3", "t4", "t5"]
    assert "b1" not in {t["id"] for c in out["conversations"] for t in c["turns"]}
    # memories without a conversation form none
    assert "trip" not in {h for c in out["conversations"] for h in c["hits"]}
    assert len(out["conversations"]) <= 10
    # 0 turns the cue's context off
    off = recall(api, alice, query=QUESTION, context=0)
    assert off["conversations"] is None
    # the flat results are the same with and without the context
    assert [r["id"] for r in off["results"]] == [r["id"] for r in recall(api, alice, query=QUESTION)["results"]]
    # bob sees his own turn only
    mine = recall(api, bob, query="offsite plans", context=2)
    assert [t["id"] for c in mine["conversations"] for t in c["turns"]] == ["b1"]


@pytest.mark.parametrize("value", [-1, 6, "lots"])
def test_bad_context_is_a_422_naming_the_field(api, alice, value) -> None:  # type: ignore[no-untyped-def]
    r = api.post("/v1/recall", json={"query": "Lisbon", "context": value}, headers=alice)
    assert r.status_code == 422
    assert "context" in r.text
