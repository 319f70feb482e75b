"""Recall by time in words on the real stack: "last week", "in January", "yesterday" read against
the request's reference_time become since/until (when the request asks: ``time_words`` is off by
default), within an explicit since/until."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration

REF = "2026-03-20T12:00:00Z"  # a Friday


def _recall(api: Any, headers: dict[str, str], query: str, **extra: Any) -> dict[str, Any]:
    body = {"query": query, "limit": 20, "reference_time": REF, "time_words": True, **extra}
    r = api.post("/v1/recall", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def _ids(body: dict[str, Any]) -> set[str]:
    return {m["id"] for m in body["results"]}


def test_time_words_scope_recall_and_leave_the_lexical_query(api, make_tenant) -> None:
    acme = make_tenant("acme")
    memories = [
        {
            "content": "pricing: we keep the team plan at 12 dollars",
            "memory_id": "jan",
            "timestamp": "2026-01-14T10:00:00Z",
        },
        {
            "content": "pricing: the team plan goes to 15 dollars",
            "memory_id": "lastweek",
            "timestamp": "2026-03-11T10:00:00Z",
        },
        {
            "content": "pricing: annual plans get two months free",
            "memory_id": "yesterday",
            "timestamp": "2026-03-19T16:00:00Z",
        },
        {"content": "pricing notes without a date", "memory_id": "undated"},
    ]
    r = api.post("/v1/memories", json={"memories": memories, "refresh": True}, headers=acme)
    assert r.status_code == 202, r.text
    wait_task(api, acme, r.json()["task_id"])

    week = _recall(api, acme, "what did I say about pricing last week")
    tr = week["query_analysis"]["time_range"]
    assert tr["source"] == "words" and tr["words"] == ["last week"]
    # Monday to Sunday, and 3 days on (time_words_after_days): what happened is told after it
    assert tr["since"].startswith("2026-03-09") and tr["until"].startswith("2026-03-18")
    assert (
        "last" not in week["query_analysis"]["lexical_query"] and "week" not in week["query_analysis"]["lexical_query"]
    )
    assert _ids(week) == {"lastweek", "undated"}  # an undated memory is not ruled out by words

    assert _ids(_recall(api, acme, "pricing in January")) == {"jan", "undated"}
    assert _ids(_recall(api, acme, "what did we say about pricing yesterday")) == {"yesterday", "undated"}
    since = _recall(api, acme, "pricing since March 1")
    assert _ids(since) == {"lastweek", "yesterday", "undated"}

    # an explicit since/until wins over the words, and is strict (undated memories are out)
    explicit = _recall(api, acme, "pricing last week", since="2026-01-01T00:00:00Z", until="2026-01-31T00:00:00Z")
    assert explicit["query_analysis"]["time_range"]["source"] == "request" and _ids(explicit) == {"jan"}
    # time words off, or none in the query: all time
    off = _recall(api, acme, "pricing last week", time_words=False)
    assert off["query_analysis"]["time_range"] is None and len(_ids(off)) == 4
    # off by default: a request that does not ask reads no time words
    plain = api.post(
        "/v1/recall", json={"query": "pricing last week", "limit": 20, "reference_time": REF}, headers=acme
    )
    assert plain.json()["query_analysis"]["time_range"] is None and len(_ids(plain.json())) == 4
    assert _recall(api, acme, "pricing plans")["query_analysis"]["time_range"] is None
    # a quoted phrase is words to find, never a time scope
    assert _recall(api, acme, "find 'the team plan' in my notes")["query_analysis"]["time_range"] is None

    # "before the launch": dated by the latest memory that says when the launch is, else left alone
    undated = _recall(api, acme, "pricing before the launch")["query_analysis"]
    assert undated["time_range"] is None and "launch" in undated["lexical_query"]  # left in, not guessed
    launch = [
        {"content": "the launch is in March", "memory_id": "l1", "timestamp": "2026-01-05T09:00:00Z"},
        {"content": "the launch moved to February", "memory_id": "l2", "timestamp": "2026-01-20T09:00:00Z"},
    ]
    r = api.post("/v1/memories", json={"memories": launch, "refresh": True}, headers=acme)
    wait_task(api, acme, r.json()["task_id"])
    before = _recall(api, acme, "pricing before the launch")
    tr = before["query_analysis"]["time_range"]
    assert tr["source"] == "event" and tr["words"] == ["before the launch"] and tr["until"].startswith("2026-01-31")
    assert {"jan", "undated"} <= _ids(before) and not {"lastweek", "yesterday"} & _ids(before)

    bad = api.post("/v1/recall", json={"query": "pricing", "reference_time": "not a time"}, headers=acme)
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"][-1] == "reference_time"
