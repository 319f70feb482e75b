"""The user-memory set (lab/data/user_memory_set.json, issue 55) has the shape its quality report
relies on: enough questions and unanswerable ones, every category, ids that exist and are unique,
replacements and conversations that hold together (pure: reads the file only)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

SET_PATH = Path(__file__).resolve().parents[2] / "lab" / "data" / "user_memory_set.json"
CATEGORIES = {"preference", "changing-fact", "quote", "number-date", "conversation", "broad-theme", "unanswerable"}
SPEC_PHRASINGS = {
    "Find exactly where I said": 0.1,
    "What was that conversation about": 0.3,
    "What do I think about": 0.6,
    "Ideas similar to": 0.8,
    "Explore everything related to": 0.9,
}


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SET_PATH.read_text())
    return loaded


def test_sizes(data: dict[str, Any]) -> None:
    questions = data["questions"]
    assert 40 <= len(data["memories"]) <= 60
    assert len(questions) >= 60
    assert sum(q["answer"] is None for q in questions) >= 15
    assert {q["category"] for q in questions} == CATEGORIES


def test_ids_unique_and_every_answer_exists(data: dict[str, Any]) -> None:
    ids = [m["id"] for m in data["memories"]]
    assert not [i for i, n in Counter(ids).items() if n > 1]
    known = set(ids)
    for q in data["questions"]:
        assert (q["answer"] is None) == (q["category"] == "unanswerable"), q
        named = [q["answer"], *q.get("accept", [])] if q["answer"] is not None else q.get("accept", [])
        assert set(named) <= known, q
        assert not (q["answer"] is None and (q.get("accept") or q.get("theme"))), q


def test_queries_unique_but_for_a_node_filter(data: dict[str, Any]) -> None:
    asked = Counter((q["query"], tuple(q.get("nodes") or ())) for q in data["questions"])
    assert not [k for k, n in asked.items() if n > 1]


def test_supersede_targets_exist_and_are_older(data: dict[str, Any]) -> None:
    by_id = {m["id"]: m for m in data["memories"]}
    replaced = [(m, old) for m in data["memories"] for old in m.get("supersedes", [])]
    assert len(replaced) >= 3
    for m, old in replaced:
        assert old in by_id and old != m["id"], m
        assert by_id[old]["timestamp"] < m["timestamp"], m
    # a question about a replaced fact expects the current version, never the one it replaced
    olds = {old for _, old in replaced}
    assert not [q for q in data["questions"] if q["answer"] in olds or set(q.get("accept", [])) & olds]


def test_nodes_conversations_and_timestamps(data: dict[str, Any]) -> None:
    mems = data["memories"]
    assert all(m.get("node") and m.get("timestamp") for m in mems)
    labels = {m["node"] for m in mems}
    for q in data["questions"]:
        for label in [q.get("theme"), *(q.get("nodes") or [])]:
            assert label is None or label in labels, q
    turns = Counter(m["conversation_id"] for m in mems if m.get("conversation_id"))
    assert len(turns) >= 3 and min(turns.values()) >= 3
    conversation_ids = {m["id"]: m.get("conversation_id") for m in mems}
    for q in data["questions"]:
        if q["category"] == "conversation":
            assert conversation_ids[q["answer"]] is not None, q


def test_the_spec_phrasings_are_asked(data: dict[str, Any]) -> None:
    """Spec 5.2's five phrasings, each with the Z its table gives."""
    for start, z in SPEC_PHRASINGS.items():
        asked = [q for q in data["questions"] if q["query"].startswith(start) and "spec_z" in q]
        assert asked and all(q["spec_z"] == z for q in asked), start
