"""One organisation, many users (issue 67), on the real stack: two users of one tenant with
look-alike memories (blood type, dentist, address) and the organisation's shared ones. Every
question for one user never returns the other's memory, through HTTP, MCP on a user's key, the
CLI, export, history and feedback; a user's key naming another user is a 403 on every route; a
read-only key writes nothing; a revoked key stops; forgetting a user leaves nothing of theirs in
any index of the prefix, and is taken over when its API died."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.forget import ForgetRequest, ForgetStatus
from brain_search.ingest.models import MemoryItem
from brain_search.store.indices import IndexNames
from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration

LENA = [
    ("lena-blood", "My blood type is A positive."),
    ("lena-dentist", "My dentist is Dr. Alvarez on Elm Street."),
    ("lena-home", "I live at 12 Rose Lane in Porto."),
    ("lena-book", "The book club meets on Thursdays at the library."),
]
OMAR = [
    ("omar-blood", "My blood type is O negative."),
    ("omar-dentist", "My dentist is Dr. Chen at the Harbor clinic."),
    ("omar-home", "I live at 48 Birch Road in Leeds."),
    ("omar-plumber", "The plumber comes on Monday to fix the boiler."),
]
SHARED = [("org-office", "The office address is 1 Main Street, the reception is on the ground floor.")]
QUESTIONS = [
    "What is my blood type?",
    "Who is my dentist?",
    "Where do I live?",
    "What is my address?",
    '"O negative"',
    "blood type O negative",
    "Dr. Chen at the Harbor clinic",
    "Explore everything related to my health",
    "dentist",
]


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _store(api: Any, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    r = api.post("/v1/memories", json={**body, "refresh": True}, headers=headers)
    assert r.status_code == 202, r.text
    task = wait_task(api, headers, r.json()["task_id"])
    assert task["indexed"] == task["submitted"], task
    return r.json()


def _ids(body: dict[str, Any]) -> set[str]:
    out = {r["id"] for r in body["results"]}
    for tier in (body.get("tiers") or {}).values():
        out |= {r["id"] for r in tier}
    return out


def _key(api: Any, org: dict[str, str], user: str, **extra: Any) -> dict[str, str]:
    r = api.post(f"/v1/users/{user}/keys", json={"label": f"{user} app", **extra}, headers=org)
    assert r.status_code == 201, r.text
    assert r.json()["user_id"] == user and r.json()["read_only"] == bool(extra.get("read_only"))
    return _bearer(r.json()["key"])


@pytest.fixture
def org(api, make_tenant) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The tenant ``acme`` (its key), keys held to lena and omar, lena's read-only key, and the
    memories: lena's written with her own key, omar's by the organisation in one batch naming him,
    the shared one with no user."""
    org = make_tenant("acme")
    lena, omar = _key(api, org, "lena"), _key(api, org, "omar")
    lena_ro = _key(api, org, "lena", read_only=True)
    for mid, text in LENA:  # her key: her memories, without naming her
        _store(api, lena, {"content": text, "memory_id": mid, "node_id": "Users/lena", "create_nodes": True})
    batch = [{"content": t, "memory_id": m, "node_id": "Users/omar"} for m, t in OMAR]
    _store(api, org, {"memories": batch, "user_id": "omar", "create_nodes": True})
    _store(api, org, {"memories": [{"content": t, "memory_id": m} for m, t in SHARED]})
    return {"org": org, "lena": lena, "omar": omar, "lena_ro": lena_ro}


def test_a_memory_belongs_to_its_user_and_keeps_its_user(api, org) -> None:  # type: ignore[no-untyped-def]
    got = api.get("/v1/memories/lena-blood", headers=org["org"]).json()
    assert got["user_id"] == "lena" and got["agent_id"] is None
    assert api.get("/v1/memories/omar-blood", headers=org["org"]).json()["user_id"] == "omar"
    assert api.get("/v1/memories/org-office", headers=org["org"]).json()["user_id"] is None
    # edits keep the owner: a PATCH of fields, a PATCH of the text (re-embedded), a PUT
    r = api.patch("/v1/memories/lena-home", json={"source": "profile"}, headers=org["lena"])
    assert r.status_code == 200 and r.json()["user_id"] == "lena", r.text
    r = api.patch("/v1/memories/lena-home", json={"content": "I live at 14 Rose Lane in Porto.", "refresh": True})
    assert r.status_code == 401  # no key: refused before anything
    r = api.patch(
        "/v1/memories/lena-home",
        json={"content": "I live at 14 Rose Lane in Porto.", "refresh": True},
        headers=org["lena"],
    )
    wait_task(api, org["lena"], r.json()["task_id"])
    r = api.put(
        "/v1/memories/lena-book", json={"content": "Book club: Thursdays.", "refresh": True}, headers=org["org"]
    )
    wait_task(api, org["org"], r.json()["task_id"])
    for mid in ("lena-home", "lena-book"):
        assert api.get(f"/v1/memories/{mid}", headers=org["org"]).json()["user_id"] == "lena"
    # an edit does not take the owner: a 422 naming the field
    r = api.patch("/v1/memories/lena-home", json={"user_id": "omar"}, headers=org["org"])
    assert r.status_code == 422 and "user_id" in r.text
    # a chosen id stored for another user is a 409; the same words from two users are two memories
    r = api.post("/v1/memories", json={"content": "mine now", "memory_id": "omar-blood"}, headers=org["lena"])
    assert r.status_code == 409 and "memory_id" in r.text, r.text
    r = api.post("/v1/memories", json={"content": "shared now", "memory_id": "lena-blood"}, headers=org["org"])
    assert r.status_code == 409, r.text
    a = _store(api, org["lena"], {"content": "I like green tea."})
    b = _store(api, org["omar"], {"content": "I like green tea."})
    assert a["memory_ids"] != b["memory_ids"]
    # bad ids are a 422 naming the field
    r = api.post("/v1/memories", json={"content": "x", "user_id": "a b"}, headers=org["org"])
    assert r.status_code == 422 and "user_id" in r.text


def test_every_question_for_one_user_reads_only_that_user(api, org) -> None:  # type: ignore[no-untyped-def]
    lena_ids = {m for m, _ in LENA}
    omar_ids = {m for m, _ in OMAR}
    shared_ids = {m for m, _ in SHARED}
    for q in QUESTIONS:
        for strict in (False, True):
            body = {"query": q, "strict": strict, "tiered": True, "limit": 20}
            seen = {
                "lena key": _ids(api.post("/v1/recall", json=body, headers=org["lena"]).json()),
                "lena read-only key": _ids(api.post("/v1/recall", json=body, headers=org["lena_ro"]).json()),
                "org key for lena": _ids(
                    api.post("/v1/recall", json={**body, "user_id": "lena"}, headers=org["org"]).json()
                ),
            }
            for how, ids in seen.items():
                assert ids <= lena_ids, (q, strict, how, ids)
            shared = api.post("/v1/recall", json={**body, "include_shared": True}, headers=org["lena"]).json()
            assert _ids(shared) <= lena_ids | shared_ids, (q, strict, shared)
            omar = _ids(api.post("/v1/recall", json=body, headers=org["omar"]).json())
            assert omar <= omar_ids, (q, strict, omar)
    # the look-alikes answer for their own user
    first = api.post("/v1/recall", json={"query": "What is my blood type?"}, headers=org["lena"]).json()
    assert first["results"][0]["id"] == "lena-blood" and first["results"][0]["metadata"]["user_id"] == "lena"
    first = api.post("/v1/recall", json={"query": "Who is my dentist?"}, headers=org["omar"]).json()
    assert first["results"][0]["id"] == "omar-dentist"
    # a quoted phrase only the other user holds: nothing matched, not the other's memory
    none = api.post("/v1/recall", json={"query": '"O negative"', "strict": True}, headers=org["lena"]).json()
    assert none["results"] == [] and none["query_analysis"]["nothing_matched"], none
    # the organisation's key without a user: the whole tenant, as before users
    both = _ids(api.post("/v1/recall", json={"query": "dentist", "limit": 20}, headers=org["org"]).json())
    assert {"lena-dentist", "omar-dentist"} <= both
    # shared: the office's address for lena, with include_shared
    out = api.post(
        "/v1/recall", json={"query": "office address", "include_shared": True, "strict": True}, headers=org["lena"]
    ).json()
    assert "org-office" in _ids(out), out


def test_reads_of_one_memory_list_export_history_and_feedback_are_the_users(api, org) -> None:  # type: ignore[no-untyped-def]
    lena, omar = org["lena"], org["omar"]
    listed = api.get("/v1/memories", params={"limit": 1000}, headers=lena).json()["memories"]
    assert {m["memory_id"] for m in listed} == {m for m, _ in LENA}
    listed = api.get("/v1/memories", params={"user_id": "omar"}, headers=org["org"]).json()["memories"]
    assert {m["memory_id"] for m in listed} == {m for m, _ in OMAR}
    listed = api.get("/v1/memories", params={"include_shared": True}, headers=lena).json()["memories"]
    assert {m["memory_id"] for m in listed} == {m for m, _ in LENA + SHARED}
    assert api.get("/v1/memories/omar-blood", headers=lena).status_code == 404  # not found, never forbidden
    assert api.get("/v1/memories/lena-blood", headers=lena).status_code == 200
    assert api.get("/v1/memories/org-office", headers=lena).status_code == 404
    assert api.get("/v1/memories/org-office", params={"include_shared": True}, headers=lena).status_code == 200
    # history: omar's edit is his
    r = api.patch("/v1/memories/omar-home", json={"source": "moved"}, headers=omar)
    assert r.status_code == 200, r.text
    assert len(api.get("/v1/memories/omar-home/history", headers=omar).json()["versions"]) == 1
    assert api.get("/v1/memories/omar-home/history", headers=lena).status_code == 404
    assert api.delete("/v1/memories/omar-home/history", headers=lena).status_code == 404
    # a delete of another user's memory: 404, and it stays
    assert api.delete("/v1/memories/omar-blood", headers=lena).status_code == 404
    assert api.get("/v1/memories/omar-blood", headers=omar).status_code == 200
    # feedback: a recall is its user's
    lena_recall = api.post("/v1/recall", json={"query": "dentist"}, headers=lena).json()["recall_id"]
    omar_recall = api.post("/v1/recall", json={"query": "dentist"}, headers=omar).json()["recall_id"]
    r = api.post(f"/v1/recall/{lena_recall}/feedback", json={"rating": 5}, headers=lena)
    assert r.status_code == 200, r.text
    assert api.post(f"/v1/recall/{omar_recall}/feedback", json={"rating": 1}, headers=lena).status_code == 404
    assert api.post(f"/v1/recall/{omar_recall}/feedback", json={"rating": 2}, headers=omar).status_code == 200
    summary = api.get("/v1/feedback/summary", headers=lena).json()
    assert summary["rating"]["count"] == 1 and summary["rating"]["mean"] == 5, summary
    org_summary = api.get("/v1/feedback/summary", headers=org["org"]).json()
    assert org_summary["rating"]["count"] == 2, org_summary
    # dead letters: each user's own
    state = api.app.state.brain
    failed = MemoryItem(memory_id="omar-bad", content="omar's unindexable memory", user_id="omar")
    state.ingest.dead_letters.add("acme", "t-omar", [(failed, ItemOutcome("omar-bad", False, reason="r"))], 1)
    assert api.get("/v1/dead-letters", headers=lena).json()["total"] == 0
    assert api.get("/v1/dead-letters", headers=omar).json()["total"] == 1
    assert api.delete("/v1/dead-letters", headers=lena).json()["deleted"] == 0
    assert api.get("/v1/dead-letters", headers=org["org"]).json()["total"] == 1


def test_a_user_key_naming_another_user_is_a_403_on_every_route(api, org) -> None:  # type: ignore[no-untyped-def]
    lena = org["lena"]
    omar = {"user_id": "omar"}
    calls = [
        ("POST", "/v1/recall", {"json": {"query": "dentist", **omar}}, "user_id"),
        ("POST", "/v1/memories", {"json": {"content": "x", **omar}}, "user_id"),
        ("POST", "/v1/memories", {"json": {"memories": [{"content": "x"}, {"content": "y", **omar}]}}, "memories.1"),
        ("POST", "/v1/memories", {"json": {"memories": [{"content": "x"}], **omar}}, "user_id"),
        ("GET", "/v1/memories", {"params": omar}, "user_id"),
        ("GET", "/v1/memories/omar-blood", {"params": omar}, "user_id"),
        ("GET", "/v1/memories/omar-blood/history", {"params": omar}, "user_id"),
        ("DELETE", "/v1/memories/omar-blood/history", {"params": omar}, "user_id"),
        ("PUT", "/v1/memories/omar-blood", {"params": omar, "json": {"content": "x"}}, "user_id"),
        ("PATCH", "/v1/memories/omar-blood", {"params": omar, "json": {"source": "x"}}, "user_id"),
        ("DELETE", "/v1/memories/omar-blood", {"params": omar}, "user_id"),
        ("POST", "/v1/forget", {"json": {"all": True, **omar}}, "user_id"),
        ("DELETE", "/v1/users/omar", {}, "user_id"),
        ("POST", "/v1/recall/rc_000000000000000000000000/feedback", {"params": omar, "json": {"rating": 3}}, "user_id"),
        ("GET", "/v1/feedback/summary", {"params": omar}, "user_id"),
        ("GET", "/v1/dead-letters", {"params": omar}, "user_id"),
        ("DELETE", "/v1/dead-letters", {"params": omar}, "user_id"),
        # what reaches past one user: the organisation's key only
        ("POST", "/v1/users/omar/keys", {"json": {}}, "key"),
        ("GET", "/v1/users/omar/keys", {}, "key"),
        ("POST", "/v1/users/lena/keys", {"json": {}}, "key"),
        ("DELETE", "/v1/nodes/Users", {"params": {"cascade": "true"}}, "key"),
        ("PATCH", "/v1/nodes/Users", {"json": {"label": "People"}}, "key"),
    ]
    for method, path, kw, field in calls:
        r = api.request(method, path, headers=lena, **kw)
        assert r.status_code == 403, (method, path, r.status_code, r.text)
        assert r.json()["field"].startswith(field), (method, path, r.json())
    # nothing of omar's moved
    assert len(api.get("/v1/memories", headers=org["omar"]).json()["memories"]) == len(OMAR)
    # naming itself is fine
    assert api.get("/v1/memories", params={"user_id": "lena"}, headers=lena).status_code == 200


def test_a_read_only_key_reads_and_never_writes_and_a_revoked_key_stops(api, org) -> None:  # type: ignore[no-untyped-def]
    ro = org["lena_ro"]
    assert api.post("/v1/recall", json={"query": "dentist"}, headers=ro).status_code == 200
    assert api.get("/v1/memories/lena-blood", headers=ro).status_code == 200
    for method, path, kw in [
        ("POST", "/v1/memories", {"json": {"content": "x"}}),
        ("PATCH", "/v1/memories/lena-blood", {"json": {"source": "x"}}),
        ("DELETE", "/v1/memories/lena-blood", {}),
        ("POST", "/v1/forget", {"json": {"all": True}}),
        ("DELETE", "/v1/users/lena", {}),
        ("POST", "/v1/nodes", {"json": {"label": "X"}}),
    ]:
        r = api.request(method, path, headers=ro, **kw)
        assert r.status_code == 403 and r.json()["field"] == "key", (method, path, r.text)
    assert api.get("/v1/memories/lena-blood", headers=ro).status_code == 200  # still there
    keys = api.get("/v1/users/lena/keys", headers=org["org"]).json()
    assert len(keys) == 2 and {k["read_only"] for k in keys} == {True, False}
    ro_id = next(k["key_id"] for k in keys if k["read_only"])
    assert api.delete(f"/v1/users/omar/keys/{ro_id}", headers=org["org"]).status_code == 404  # not omar's
    assert api.delete(f"/v1/users/lena/keys/{ro_id}", headers=org["org"]).status_code == 204
    r = api.post("/v1/recall", json={"query": "dentist"}, headers=ro)
    assert r.status_code == 401 and "revoked" in r.text


def test_mcp_on_a_user_key_cannot_widen_its_scope(api, org, live_api) -> None:  # type: ignore[no-untyped-def]
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with (
            streamablehttp_client(f"{live_api}/mcp/", headers=org["lena"]) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for q in QUESTIONS:
                got = await session.call_tool("brain_recall", {"query": q, "strict": False, "limit": 20})
                out.setdefault("ids", set()).update(r["id"] for r in json.loads(got.content[0].text)["results"])  # type: ignore[union-attr]
            widen = await session.call_tool("brain_recall", {"query": "blood type", "user_id": "omar"})
            out["widen"] = (widen.isError, widen.content[0].text)  # type: ignore[union-attr]
            write_other = await session.call_tool("brain_remember", {"content": "x", "user_id": "omar"})
            out["write_other"] = (write_other.isError, write_other.content[0].text)  # type: ignore[union-attr]
            forget_other = await session.call_tool("brain_forget", {"all": True, "user_id": "omar"})
            out["forget_other"] = (forget_other.isError, forget_other.content[0].text)  # type: ignore[union-attr]
            delete_other = await session.call_tool("brain_forget", {"memory_id": "omar-blood"})
            out["delete_other"] = delete_other.isError
            mine = await session.call_tool("brain_remember", {"content": "My sister is called Ana.", "wait": True})
            out["mine"] = json.loads(mine.content[0].text)  # type: ignore[union-attr]
            rec = await session.call_tool("brain_recall", {"query": "Who is my dentist?"})
            recall_id = json.loads(rec.content[0].text)["recall_id"]  # type: ignore[union-attr]
            rated = await session.call_tool("brain_feedback", {"recall_id": recall_id, "rating": 4})
            out["rated"] = json.loads(rated.content[0].text)["rating"]  # type: ignore[union-attr]
        return out

    out = anyio.run(main)
    assert out["ids"] and out["ids"] <= {m for m, _ in LENA}, out["ids"]
    for name in ("widen", "write_other", "forget_other"):
        assert out[name][0] and "user_id" in out[name][1], (name, out[name])
    assert out["delete_other"] is True  # not found for her
    assert api.get("/v1/memories/omar-blood", headers=org["omar"]).status_code == 200
    [mine] = out["mine"]["memory_ids"]
    assert api.get(f"/v1/memories/{mine}", headers=org["org"]).json()["user_id"] == "lena"
    assert out["rated"] == 4


def test_the_cli_with_a_user_key(api, org, live_api, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BRAIN_API_URL": live_api, "COLUMNS": "200"}
    lena_key = org["lena"]["Authorization"].removeprefix("Bearer ")
    org_key = org["org"]["Authorization"].removeprefix("Bearer ")

    def cli(*args: str, key: str = lena_key) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "brain_search.commands.cli", *args],
            env={**env, "BRAIN_API_KEY": key},
            capture_output=True,
            text=True,
            timeout=120,
        )

    for q in ("What is my blood type?", "Who is my dentist?", "Where do I live?"):
        out = cli("recall", q, "--json", "--limit", "20")
        assert out.returncode == 0, out.stderr
        ids = {r["id"] for r in json.loads(out.stdout)["results"]}
        assert ids and ids <= {m for m, _ in LENA}, (q, ids)
    out = cli("recall", "dentist", "--user", "omar")
    assert out.returncode == 1 and "403" in out.stdout and "--user" in out.stdout, out.stdout
    # export: a user's key exports its user; the organisation's key one user with --user
    mine = tmp_path / "lena.jsonl"
    assert cli("export", str(mine)).returncode == 0
    lines = [json.loads(line) for line in mine.read_text().splitlines()]
    assert {m["memory_id"] for m in lines} == {m for m, _ in LENA} and {m["user_id"] for m in lines} == {"lena"}
    his = tmp_path / "omar.jsonl"
    assert cli("export", str(his), "--user", "omar", key=org_key).returncode == 0
    assert {json.loads(line)["memory_id"] for line in his.read_text().splitlines()} == {m for m, _ in OMAR}
    # remember with the user's key; a user's history through the CLI
    out = cli("remember", "My favourite colour is teal.", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    [stored] = json.loads(out.stdout)["memory_ids"]
    assert api.get(f"/v1/memories/{stored}", headers=org["org"]).json()["user_id"] == "lena"
    assert cli("memories", "history", "omar-home").returncode == 1  # not found for her
    out = cli("users", "key", "omar", "--read-only", key=org_key)
    assert out.returncode == 0 and "bsk_" in out.stdout, out.stdout + out.stderr


def test_forget_a_user_leaves_nothing_of_theirs_in_any_index(api, org, client, stack_settings) -> None:  # type: ignore[no-untyped-def]
    state = api.app.state.brain
    lena, omar = org["lena"], org["omar"]
    assert api.patch("/v1/memories/omar-home", json={"source": "moved"}, headers=omar).status_code == 200
    failed = MemoryItem(memory_id="omar-bad", content="omar's unindexable memory", user_id="omar")
    state.ingest.dead_letters.add("acme", "t-omar", [(failed, ItemOutcome("omar-bad", False, reason="r"))], 1)
    omar_recall = api.post("/v1/recall", json={"query": "O negative blood"}, headers=omar).json()["recall_id"]
    api.post(f"/v1/recall/{omar_recall}/feedback", json={"rating": 2}, headers=omar)
    lena_recall = api.post("/v1/recall", json={"query": "dentist", "include_shared": True}, headers=lena).json()
    state.feedback.recorder.flush()

    r = api.delete("/v1/users/omar", headers=org["org"])
    assert r.status_code == 202 and r.json()["keys"] == 1, r.text  # his key goes at once
    assert api.get("/v1/memories", headers=omar).status_code == 401
    deadline = time.monotonic() + 60
    while (status := api.get(f"/v1/forget/{r.json()['task_id']}", headers=org["org"]).json())["state"] == "running":
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    assert status["state"] == "succeeded", status
    assert status["memories"] == len(OMAR) and status["history"] == 1 and status["dead_letters"] == 1, status
    assert status["feedback"] >= 1, status

    # a scan of every index of the prefix: no document names omar or holds one of his texts
    names = IndexNames.of(stack_settings)
    client.indices.refresh(index=names.everything)
    texts = [t for _, t in OMAR] + ["omar's unindexable memory", "O negative blood"]
    clauses: list[dict[str, Any]] = [{"term": {"user_id": "omar"}}, {"term": {"user_ids": "omar"}}]
    clauses += [{"match_phrase": {"content": t}} for t in texts]
    clauses += [{"query_string": {"query": f'"{t}"', "fields": ["*"], "lenient": True}} for t in texts]
    found = client.search(
        index=names.everything,
        body={"query": {"bool": {"should": clauses, "minimum_should_match": 1}}, "size": 20},
        params={"expand_wildcards": "all"},
    )["hits"]["hits"]
    leftovers = [(h["_index"], h["_source"]) for h in found]
    # the forget's own task record names the user it forgot (its request), and nothing of theirs
    leftovers = [(i, s) for i, s in leftovers if not (i == names.node_tasks and s.get("kind") == "forget")]
    assert leftovers == [], leftovers
    # lena and the shared memory are untouched; her recall record keeps its own results
    assert len(api.get("/v1/memories", headers=lena).json()["memories"]) == len(LENA)
    assert api.get("/v1/memories/org-office", headers=org["org"]).status_code == 200
    assert (
        api.post(f"/v1/recall/{lena_recall['recall_id']}/feedback", json={"rating": 3}, headers=lena).status_code == 200
    )
    # forgotten: nothing of his answers, and his earlier writes cannot come back (tombstones)
    out = api.post("/v1/recall", json={"query": "blood type", "user_id": "omar"}, headers=org["org"]).json()
    assert out["results"] == []


def test_a_user_forget_whose_api_died_is_taken_over(api, org) -> None:  # type: ignore[no-untyped-def]
    """The forget of a user is the leased, resumable forget task: recorded with its request (the
    user) before the 202; one whose lease ran out (its API was killed) is run by another API from
    its record alone."""
    forgetter = api.app.state.brain.ingest.forgetter
    req = ForgetRequest(user_id="omar", all=True)
    status = ForgetStatus(task_id="forget_dead0000000000", created_at=datetime.now(UTC) - timedelta(minutes=5))
    job = {
        "request": req.model_dump(mode="json"),
        "node_label": None,
        "version": api.app.state.brain.ingest.versions.next(),
    }
    forgetter._save("acme", status, job)  # as the killed API left it: recorded, running, never run
    stale = {"doc": {"lease_until": (datetime.now(UTC) - timedelta(minutes=1)).isoformat()}}
    forgetter.client.update(
        index=forgetter.names.node_tasks, id=_task_doc("acme", status.task_id), body=stale, params={"refresh": "true"}
    )
    assert len(api.get("/v1/memories", headers=org["omar"]).json()["memories"]) == len(OMAR)
    assert forgetter.resume_stale() == 1
    done = forgetter.status("acme", status.task_id)
    assert done.state == "succeeded" and done.memories == len(OMAR), done
    assert api.get("/v1/memories", headers=org["omar"]).json()["memories"] == []
    assert len(api.get("/v1/memories", headers=org["lena"]).json()["memories"]) == len(LENA)


def _task_doc(tenant: str, task_id: str) -> str:
    from brain_search.graph.ops import task_doc_id

    return task_doc_id(tenant, task_id)
