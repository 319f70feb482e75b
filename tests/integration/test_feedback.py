"""Feedback on recalls on the real stack: the recall_id, ratings and marks over HTTP, MCP and the
CLI, the summary and the metrics, bad input, tenant isolation, retention, forget and erase, and
the lab's replay of a tenant's judgements."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from brain_search.feedback.records import record_doc_id
from brain_search.store.indices import IndexNames
from tests.conftest import ADMIN_KEY
from tests.integration.recall_corpus import index_corpus

pytestmark = pytest.mark.integration
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def _recall(api: Any, headers: dict[str, str], query: str = "equity split", **extra: Any) -> dict[str, Any]:
    r = api.post("/v1/recall", json={"query": query, "limit": 5, **extra}, headers=headers)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _feedback(api: Any, headers: dict[str, str], recall_id: str, body: dict[str, Any]) -> Any:
    return api.post(f"/v1/recall/{recall_id}/feedback", json=body, headers=headers)


def _record(client: Any, settings: Any, tenant: str, recall_id: str) -> dict[str, Any]:
    r = client.get(index=IndexNames.of(settings).feedback, id=record_doc_id(tenant, recall_id))
    src: dict[str, Any] = r["_source"]
    return src


def _counters(text: str) -> dict[str, float]:
    """The process's metric samples by their line name (``name{labels}``): the app and its
    registry live for the whole test session, so a test reads differences."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_rate_a_recall_and_read_the_summary(api, alice, client) -> None:
    before = _counters(api.get("/metrics").text)
    first = _recall(api, alice, 'Find where I said "53% for me"')
    rid = first["recall_id"]
    assert re.fullmatch(r"rc_[0-9a-f]{24}", rid), rid
    ids = [r["id"] for r in first["results"]]
    assert ids[0] == "eq" and len(ids) >= 2

    r = _feedback(api, alice, rid, {"rating": 4, "results": [{"memory_id": "eq", "relevant": True}]})
    assert r.status_code == 200, r.text
    assert r.json()["rating"] == 4 and [m["memory_id"] for m in r.json()["results"]] == ["eq"]
    # sent again: the rating is replaced, marks are replaced per result and added
    r = _feedback(
        api,
        alice,
        rid,
        {"rating": 5, "results": [{"memory_id": ids[1], "relevant": False}, {"memory_id": "eq", "relevant": True}]},
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["rating"] == 5
    assert [(m["memory_id"], m["relevant"], m["rank"]) for m in answer["results"]] == [
        ("eq", True, 1),
        (ids[1], False, 2),
    ]
    assert answer["results"][0]["tier"] == "exact_matches"

    # what is kept: the query, its analysis, ids and numbers; no memory text
    state = api.app.state.brain
    kept = _record(client, state.settings, "alice", rid)
    assert kept["query"] == 'Find where I said "53% for me"' and kept["intent"] == "exact"
    assert kept["memory_ids"] == ids and {"z", "lexical", "semantic", "relevance"} <= set(kept["results"][0])
    assert "The equity split" not in json.dumps(kept)

    second = _recall(api, alice, "groceries at the market")
    assert _feedback(api, alice, second["recall_id"], {"rating": 2}).status_code == 200
    _recall(api, alice, "a recall nobody rates")

    s = api.get("/v1/feedback/summary", headers=alice)
    assert s.status_code == 200, s.text
    summary = s.json()
    assert summary["rating"]["count"] == 2 and summary["rating"]["mean"] == 3.5
    assert summary["rating"]["distribution"] == {"2": 1, "5": 1}
    assert summary["rating"]["low"] == 1.0 and summary["rating"]["high"] == 5.0  # two ratings: t(1) is wide
    assert summary["recalls_kept"] >= 2
    assert summary["relevant"] == {"marked": 2, "relevant": 1, "share": 0.5, **_wilson(summary["relevant"])}
    assert summary["relevant_by_tier"]["exact_matches"]["relevant"] == 1
    assert summary["relevant_by_intent"]["exact"]["marked"] == 2
    assert summary["rating_by_intent"]["exact"]["mean"] == 5.0
    assert [w["query"] for w in summary["worst"]] == ["groceries at the market", 'Find where I said "53% for me"']
    assert summary["worst"][0]["rating"] == 2 and summary["days"] == 30

    # the metrics report what was given
    now = _counters(api.get("/metrics").text)

    def delta(name: str) -> float:
        return now.get(name, 0.0) - before.get(name, 0.0)

    assert delta("brain_feedback_rating_count") == 3.0 and delta("brain_feedback_rating_sum") == 11.0
    assert delta('brain_feedback_results_total{relevant="true"}') == 2.0
    assert delta('brain_feedback_results_total{relevant="false"}') == 1.0
    state.metrics.task_cache_s = 0.0
    text = api.get("/metrics").text
    assert "brain_feedback_stored_ratings 2.0" in text and "brain_feedback_stored_rating_mean 3.5" in text
    assert re.search(r'brain_feedback_recalls_recorded_total\{outcome="recorded"\} [1-9]', text)


def _wilson(share: dict[str, Any]) -> dict[str, Any]:
    assert 0.0 <= share["low"] < share["share"] < share["high"] <= 1.0
    return {"low": share["low"], "high": share["high"]}


def test_bad_feedback_is_refused_with_the_field(api, alice) -> None:
    rid = _recall(api, alice)["recall_id"]
    for bad in (0, 6, 4.5, "five"):
        r = _feedback(api, alice, rid, {"rating": bad})
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["detail"][0]["loc"] == ["body", "rating"], r.text
    r = _feedback(api, alice, rid, {})
    assert r.status_code == 422 and "rating" in r.text
    r = _feedback(api, alice, rid, {"results": [{"memory_id": "dog-never-shown", "relevant": True}]})
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == ["body", "results", "0", "memory_id"]
    r = _feedback(api, alice, rid, {"results": [{"memory_id": "eq"}]})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "relevant"
    # unknown and malformed ids: 404
    assert _feedback(api, alice, "rc_" + "0" * 24, {"rating": 3}).status_code == 404
    assert _feedback(api, alice, "nope", {"rating": 3}).status_code == 404
    # no key: 401, before anything else
    assert api.post(f"/v1/recall/{rid}/feedback", json={"rating": 3}).status_code == 401
    assert api.get("/v1/feedback/summary?days=0", headers=alice).status_code == 422


def test_another_tenants_recall_is_a_404_and_its_summary_is_its_own(api, alice, make_tenant, client) -> None:
    bob = make_tenant("bob")
    index_corpus(api.app.state.brain, client, "bob")
    rid = _recall(api, alice)["recall_id"]
    r = _feedback(api, bob, rid, {"rating": 1})
    assert r.status_code == 404 and r.json() == {"detail": f"recall {rid!r} not found"}  # never a 403
    assert _feedback(api, alice, rid, {"rating": 5}).status_code == 200
    bobs = _recall(api, bob)["recall_id"]
    assert _feedback(api, bob, bobs, {"rating": 1}).status_code == 200
    assert api.get("/v1/feedback/summary", headers=alice).json()["rating"]["mean"] == 5.0
    assert api.get("/v1/feedback/summary", headers=bob).json()["rating"]["mean"] == 1.0


def test_retention_expiry_and_the_tenants_own_retention(api, alice, client) -> None:
    state = api.app.state.brain
    rid = _recall(api, alice)["recall_id"]
    assert _feedback(api, alice, rid, {"rating": 2}).status_code == 200
    kept = _record(client, state.settings, "alice", rid)
    at, until = datetime.fromisoformat(kept["at"]), datetime.fromisoformat(kept["expires_at"])
    assert until - at == timedelta(seconds=state.settings.feedback_retention_s)
    # expired: a 404 and out of the summary, before any purge
    past = {"doc": {"expires_at": (datetime.now(UTC) - timedelta(seconds=1)).isoformat()}}
    client.update(index=IndexNames.of(state.settings).feedback, id=record_doc_id("alice", rid), body=past)
    client.indices.refresh(index=IndexNames.of(state.settings).feedback)
    assert _feedback(api, alice, rid, {"rating": 3}).status_code == 404
    assert api.get("/v1/feedback/summary", headers=alice).json()["rating"]["count"] == 0
    assert state.feedback.store.purge_expired() == 1

    r = api.put("/v1/admin/tenants/alice/feedback-retention", json={"retention_s": 7200}, headers=ADMIN)
    assert r.status_code == 200 and r.json() == {"tenant_id": "alice", "retention_s": 7200, "default": False}
    rid = _recall(api, alice)["recall_id"]
    assert _feedback(api, alice, rid, {"rating": 4}).status_code == 200
    kept = _record(client, state.settings, "alice", rid)
    assert datetime.fromisoformat(kept["expires_at"]) - datetime.fromisoformat(kept["at"]) == timedelta(hours=2)
    assert api.get("/v1/feedback/summary", headers=alice).json()["days"] == 1
    too_long = state.settings.feedback_retention_max_s + 1
    r = api.put("/v1/admin/tenants/alice/feedback-retention", json={"retention_s": too_long}, headers=ADMIN)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "retention_s"]
    r = api.put("/v1/admin/tenants/alice/feedback-retention", json={"retention_s": 60}, headers=ADMIN)
    assert r.status_code == 422
    nobody = api.put("/v1/admin/tenants/nobody/feedback-retention", json={"retention_s": None}, headers=ADMIN)
    assert nobody.status_code == 404
    back = api.put("/v1/admin/tenants/alice/feedback-retention", json={"retention_s": None}, headers=ADMIN)
    assert back.json()["default"] is True and back.json()["retention_s"] == state.settings.feedback_retention_s


def test_forgetting_memories_removes_their_feedback(api, alice, client) -> None:
    from tests.integration.test_forget import _wait_forget

    state = api.app.state.brain
    resp = _recall(api, alice, "CTO compensation and the equity split", limit=10)
    rid, ids = resp["recall_id"], [r["id"] for r in resp["results"]]
    assert {"eq", "cto"} <= set(ids), ids
    marks = [{"memory_id": "eq", "relevant": True}, {"memory_id": "cto", "relevant": True}]
    assert _feedback(api, alice, rid, {"rating": 4, "results": marks}).status_code == 200

    assert api.delete("/v1/memories/eq", headers=alice).status_code == 204
    kept = _record(client, state.settings, "alice", rid)
    assert "eq" not in kept["memory_ids"] and "eq" not in [r["id"] for r in kept["results"]]
    assert [m["memory_id"] for m in kept["marks"]] == ["cto"] and kept["rating"] == 4
    # a result forgotten cannot be marked any more
    assert _feedback(api, alice, rid, {"results": [{"memory_id": "eq", "relevant": False}]}).status_code == 422

    started = api.post("/v1/forget", json={"conversation_id": "conv-cto"}, headers=alice)
    assert _wait_forget(api, alice, started.json()["task_id"])["state"] == "succeeded"
    kept = _record(client, state.settings, "alice", rid)
    assert "cto" not in kept["memory_ids"] and kept["marks"] == []
    assert api.get("/v1/feedback/summary", headers=alice).json()["relevant"]["marked"] == 0

    started = api.post("/v1/forget", json={"all": True}, headers=alice)
    assert _wait_forget(api, alice, started.json()["task_id"])["state"] == "succeeded"
    assert _feedback(api, alice, rid, {"rating": 1}).status_code == 404
    assert api.get("/v1/feedback/summary", headers=alice).json()["recalls_kept"] == 0


def test_erasing_a_tenant_removes_its_feedback(api, alice, make_tenant, client) -> None:
    from brain_search.tenancy.erase import count_everywhere

    state = api.app.state.brain
    rid = _recall(api, alice)["recall_id"]
    assert _feedback(api, alice, rid, {"rating": 3}).status_code == 200
    feedback_index = IndexNames.of(state.settings).feedback
    assert count_everywhere(client, state.settings, "alice")[feedback_index] == 1
    assert api.delete("/v1/admin/tenants/alice", headers=ADMIN).status_code == 200
    assert count_everywhere(client, state.settings, "alice")[feedback_index] == 0


def test_feedback_is_rate_limited_like_the_rest(api, make_tenant) -> None:
    busy = make_tenant("busy-fb")
    rid = _recall(api, busy)["recall_id"]
    r = api.put("/v1/admin/tenants/busy-fb/rate-limit", json={"requests_per_s": 1, "burst": 3}, headers=ADMIN)
    assert r.status_code == 200
    codes = [_feedback(api, busy, rid, {"rating": 4}).status_code for _ in range(8)]
    assert codes[:3] == [200] * 3 and codes.count(429) >= 4, codes


def test_feedback_over_mcp_and_the_cli(api, alice, live_api) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client
    from typer.testing import CliRunner

    from brain_search.commands.cli import app

    async def main() -> tuple[list[str], dict[str, Any], str, str]:
        async with (
            streamablehttp_client(f"{live_api}/mcp/", headers=alice) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            got = await session.call_tool("brain_recall", {"query": 'Find where I said "53% for me"', "limit": 3})
            rid = json.loads(got.content[0].text)["recall_id"]  # type: ignore[union-attr]
            marks = [{"memory_id": "eq", "relevant": True}]
            ok = await session.call_tool("brain_feedback", {"recall_id": rid, "rating": 5, "results": marks})
            assert not ok.isError, ok
            bad = await session.call_tool("brain_feedback", {"recall_id": rid, "rating": 9})
            assert bad.isError
            gone = await session.call_tool("brain_feedback", {"recall_id": "rc_" + "1" * 24, "rating": 3})
            assert gone.isError
            return names, json.loads(ok.content[0].text), bad.content[0].text, gone.content[0].text  # type: ignore[union-attr]

    names, answer, bad, gone = anyio.run(main)
    assert "brain_feedback" in names
    assert answer["rating"] == 5 and answer["results"][0]["memory_id"] == "eq"
    assert "rating" in bad and "not found" in gone

    env = {"BRAIN_API_URL": live_api, "BRAIN_API_KEY": alice["Authorization"].removeprefix("Bearer "), "COLUMNS": "200"}
    runner = CliRunner()
    out = runner.invoke(app, ["recall", "equity split", "--limit", "3"], env=env)
    assert out.exit_code == 0, out.output
    rid = re.search(r"recall (rc_[0-9a-f]{24})", out.output).group(1)  # type: ignore[union-attr]
    out = runner.invoke(app, ["feedback", "rate", rid, "--rating", "2", "--relevant", "eq"], env=env)
    assert out.exit_code == 0 and "★★ " in out.output and "eq 👍" in out.output, out.output
    out = runner.invoke(app, ["feedback", "rate", rid, "--rating", "7"], env=env)
    # refused by the client before anything is sent (the API's own model): a usage error, exit 2
    assert out.exit_code == 2 and "--rating" in out.output, out.output
    out = runner.invoke(app, ["feedback", "rate", "rc_" + "2" * 24, "--rating", "3"], env=env)
    assert out.exit_code == 1 and "404" in out.output, out.output
    out = runner.invoke(app, ["feedback", "summary"], env=env)
    assert out.exit_code == 0 and "2 rated · mean 3.50 / 5" in out.output, out.output
    assert "equity split" in out.output  # the worst-rated query
    out = runner.invoke(app, ["feedback", "summary", "--json"], env=env)
    assert json.loads(out.output)["rating"]["count"] == 2


def test_the_lab_replays_the_tenants_feedback(api, alice) -> None:
    from brain_lab.commands.feedback import run
    from brain_lab.eval.feedback_set import labelled_set

    state = api.app.state.brain
    judged = {
        "equity split": ("eq", "groceries"),
        "who offered to join as CTO": ("cto", "dog"),
        "running in the park": ("run", "web"),
    }
    for query, (good, bad) in judged.items():
        resp = _recall(api, alice, query, limit=10)
        shown = [r["id"] for r in resp["results"]]
        marks = [{"memory_id": good, "relevant": True}]
        marks += [{"memory_id": bad, "relevant": False}] if bad in shown else []
        assert _feedback(api, alice, resp["recall_id"], {"rating": 4, "results": marks}).status_code == 200
    only_bad = _recall(api, alice, "something else entirely", limit=10)
    bad_id = only_bad["results"][0]["id"]
    not_relevant = {"results": [{"memory_id": bad_id, "relevant": False}]}
    assert _feedback(api, alice, only_bad["recall_id"], not_relevant).status_code == 200

    labelled = labelled_set(state.feedback.store.judged("alice"))
    assert sorted(q.query for q in labelled.queries) == sorted(judged) and labelled.no_relevant == 1
    assert all(q.relevant == {judged[q.query][0]: 1} for q in labelled.queries)
    table = run(labelled, state.retriever, "alice")
    print("feedback replay:", table)
    assert table["current"]["R@10"] == 1.0 and table["current"]["MRR@10"] == 1.0
    assert table["as judged"] == table["current"]  # the ranking has not changed since
    # another tenant sees none of it
    assert labelled_set(state.feedback.store.judged("bob")).queries == []
