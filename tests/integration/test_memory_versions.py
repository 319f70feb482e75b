"""PUT, PATCH, If-Match and history on the real stack (embedded mode)."""

from __future__ import annotations

from typing import Any

import pytest

from brain_search.store.documents import memory_doc_id
from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration


def _vector(client: Any, alias: str, tenant: str, memory_id: str) -> list[float]:
    r = client.get(index=alias, id=memory_doc_id(tenant, memory_id), params={"routing": tenant})
    return list(r["_source"]["embedding"])


def test_put_patch_if_match_and_history(api, make_tenant, client, stack_settings) -> None:
    acme, other = make_tenant("acme"), make_tenant("other")
    alias = stack_settings.memories_alias
    r = api.post(
        "/v1/memories", json={"content": "the launch is in March", "memory_id": "m1", "refresh": True}, headers=acme
    )
    wait_task(api, acme, r.json()["task_id"])
    got = api.get("/v1/memories/m1", headers=acme)
    v1 = got.json()["version"]
    assert got.headers["ETag"] == f'"{v1}"' and v1 > 0

    # a stale If-Match is a 412 that names the stored version; nothing changes
    stale = api.put("/v1/memories/m1", json={"content": "x"}, headers={**acme, "If-Match": '"1"'})
    assert stale.status_code == 412 and stale.headers["ETag"] == f'"{v1}"', stale.text
    assert api.put("/v1/memories/nope", json={"content": "x"}, headers=acme).status_code == 404
    assert api.put("/v1/memories/m1", json={"content": "x"}, headers=other).status_code == 404
    blank = api.put("/v1/memories/m1", json={"content": "  "}, headers=acme)
    assert blank.status_code == 422 and blank.json()["detail"][0]["loc"][-1] == "content"

    # PUT replaces and re-embeds, through a task; the old version goes to the history
    before_vec = _vector(client, alias, "acme", "m1")
    put = api.put(
        "/v1/memories/m1",
        json={"content": "the launch moved to May", "refresh": True},
        headers={**acme, "If-Match": f'"{v1}"'},
    )
    assert put.status_code == 202, put.text
    v2 = put.json()["version"]
    assert v2 > v1 and wait_task(api, acme, put.json()["task_id"])["indexed"] == 1
    now = api.get("/v1/memories/m1", headers=acme).json()
    assert (now["content"], now["version"]) == ("the launch moved to May", v2)
    assert _vector(client, alias, "acme", "m1") != before_vec  # re-embedded
    hits = api.post("/v1/recall", json={"query": "launch moved to May"}, headers=acme).json()["results"]
    assert hits and hits[0]["id"] == "m1" and hits[0]["content"] == "the launch moved to May"

    # PATCH changes fields at once and keeps the vector
    vec = _vector(client, alias, "acme", "m1")
    patched = api.patch("/v1/memories/m1", json={"source": "notes", "metadata": {"topic": "launch"}}, headers=acme)
    assert patched.status_code == 200, patched.text
    v3 = patched.json()["version"]
    assert v3 > v2 and patched.headers["ETag"] == f'"{v3}"'
    now = api.get("/v1/memories/m1", headers=acme).json()
    assert (now["source"], now["metadata"], now["content"]) == ("notes", {"topic": "launch"}, "the launch moved to May")
    assert _vector(client, alias, "acme", "m1") == vec
    for blank in ({"content": "  "}, {"content": None}):  # the text can change, never go
        text = api.patch("/v1/memories/m1", json=blank, headers=acme)
        assert text.status_code == 422 and text.json()["detail"][0]["loc"][-1] == "content", text.text
    assert api.patch("/v1/memories/m1", json={}, headers=acme).status_code == 422
    assert (
        api.patch("/v1/memories/m1", json={"source": "x"}, headers={**acme, "If-Match": f'"{v2}"'}).status_code == 412
    )
    assert api.patch("/v1/memories/nope", json={"source": "x"}, headers=acme).status_code == 404

    history = api.get("/v1/memories/m1/history", headers=acme).json()["versions"]
    assert [(h["version"], h["replaced_by"], h["memory"]["content"]) for h in history] == [
        (v2, "patch", "the launch moved to May"),
        (v1, "put", "the launch is in March"),
    ]
    assert api.get("/v1/memories/m1/history", headers=other).status_code == 404

    # DELETE takes the history with it
    assert api.delete("/v1/memories/m1", headers=acme).status_code == 204
    assert api.get("/v1/memories/m1/history", headers=acme).status_code == 404


def test_cli_memories_get_update_patch_history_delete(live_api, api, make_tenant) -> None:
    import json

    from typer.testing import CliRunner

    from brain_search.commands.cli import app

    acme = make_tenant("acme")
    r = api.post("/v1/memories", json={"content": "first words", "memory_id": "c1", "refresh": True}, headers=acme)
    wait_task(api, acme, r.json()["task_id"])
    env = {"BRAIN_API_URL": live_api, "BRAIN_API_KEY": acme["Authorization"].removeprefix("Bearer ")}
    runner = CliRunner()

    def run(*args: str, code: int = 0) -> str:
        out = runner.invoke(app, list(args), env=env)
        assert out.exit_code == code, (args, out.output)
        return out.output

    v1 = json.loads(run("memories", "get", "c1", "--json"))["version"]
    assert "412" in run("memories", "update", "c1", "-c", "second words", "--if-match", "1", code=1)
    assert "stored" in run("memories", "update", "c1", "-c", "second words", "--if-match", str(v1))
    assert "second words" in run("memories", "get", "c1")
    patched = json.loads(run("memories", "patch", "c1", "--metadata", '{"k": 1}', "--json"))
    assert patched["metadata"] == {"k": 1} and patched["content"] == "second words"
    assert "not JSON" in run("memories", "patch", "c1", "--metadata", "{nope", code=2)
    lines = run("memories", "history", "c1").strip().splitlines()
    assert len(lines) == 2 and "patch" in lines[0] and "first words" in lines[1]
    run("memories", "delete", "c1")
    assert "404" in run("memories", "get", "c1", code=1)


def test_list_with_filters_and_cursor_then_export_import_round_trip(live_api, api, make_tenant, tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from brain_search.commands.cli import app

    acme, copy = make_tenant("acme"), make_tenant("acme-copy")
    batch = [
        {
            "content": f"turn {i} of the chat about the launch",
            "memory_id": f"t{i:02d}",
            "conversation_id": "c1" if i % 2 else "c2",
            "node_id": "Work/Launch",
            "timestamp": f"2026-03-{i + 1:02d}T10:00:00+00:00",
            "source": "chat",
            "metadata": {"speaker": "Priya" if i % 3 else "Jacob", "n": i},
        }
        for i in range(25)
    ]
    batch.append({"content": "a long note " + "word " * 400, "memory_id": "note", "metadata": {"kind": "doc"}})
    r = api.post(
        "/v1/memories", json={"memories": batch, "chunk": True, "create_nodes": True, "refresh": True}, headers=acme
    )
    wait_task(api, acme, r.json()["task_id"])

    pages, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 7, **({"cursor": cursor} if cursor else {})}
        page = api.get("/v1/memories", params=params, headers=acme).json()
        pages.append(page["memories"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    ids = [m["memory_id"] for p in pages for m in p]
    assert ids == sorted(ids) and len(ids) == len(set(ids))  # id order, each once
    assert len(ids) == r.json()["submitted"]
    c1 = api.get("/v1/memories", params={"conversation_id": "c1", "limit": 100}, headers=acme).json()["memories"]
    assert {m["memory_id"] for m in c1} == {f"t{i:02d}" for i in range(25) if i % 2}
    ranged = api.get(
        "/v1/memories", params={"since": "2026-03-05T00:00:00Z", "until": "2026-03-07T23:00:00Z"}, headers=acme
    ).json()["memories"]
    assert [m["memory_id"] for m in ranged] == ["t04", "t05", "t06"]
    assert api.get("/v1/memories", params={"node": "Nowhere"}, headers=acme).status_code == 422
    assert api.get("/v1/memories", params={"cursor": "%%%"}, headers=acme).status_code == 422
    assert api.get("/v1/memories", headers=copy).json()["memories"] == []  # tenants apart

    # export → import into another tenant → identical memories
    out = tmp_path / "acme.jsonl"
    runner = CliRunner()
    key = {"BRAIN_API_URL": live_api, "BRAIN_API_KEY": acme["Authorization"].removeprefix("Bearer ")}
    res = runner.invoke(app, ["export", str(out)], env=key)
    assert res.exit_code == 0 and f"{len(ids)} memories written" in res.output, res.output
    copy_env = {"BRAIN_API_URL": live_api, "BRAIN_API_KEY": copy["Authorization"].removeprefix("Bearer ")}
    res = runner.invoke(app, ["import", str(out)], env=copy_env)
    assert res.exit_code == 0, res.output

    def everything(headers: dict[str, str]) -> list[dict[str, Any]]:
        got = api.get("/v1/memories", params={"limit": 1000}, headers=headers).json()["memories"]
        keep = ("memory_id", "content", "node_path", "timestamp", "source", "conversation_id", "metadata")
        return [{k: m.get(k) for k in keep} for m in got]

    assert everything(copy) == everything(acme)
    assert json.loads(out.read_text().splitlines()[0])["memory_id"] == ids[0]


EDITED = {
    "node_id": "Travel/Japan",
    "timestamp": "2026-03-02T10:00:00+00:00",
    "conversation_id": "trip",
    "source": "chat",
    "metadata": {"who": "Maya"},
}
KEPT = ("node_id", "node_path", "timestamp", "conversation_id", "source", "metadata")


def _post_full(api: Any, headers: dict[str, str], memory_id: str, content: str) -> dict[str, Any]:
    body = {"content": content, "memory_id": memory_id, "create_nodes": True, "refresh": True, **EDITED}
    r = api.post("/v1/memories", json=body, headers=headers)
    assert r.status_code == 202, r.text
    wait_task(api, headers, r.json()["task_id"])
    got: dict[str, Any] = api.get(f"/v1/memories/{memory_id}", headers=headers).json()
    assert got["conversation_id"] == "trip" and got["node_path"] == "Travel/Japan", got
    return got


def test_a_text_edit_keeps_every_field_it_does_not_name(api, make_tenant, client, stack_settings) -> None:
    """Issue 42.1: PATCH with `content` re-embeds the new text (a task, 202) and keeps the node,
    time, conversation, source and metadata; PUT stays the full replace."""
    acme = make_tenant("acme")
    alias = stack_settings.memories_alias
    before = _post_full(api, acme, "e1", "Maya wants to see Fushimi Inari")
    vec = _vector(client, alias, "acme", "e1")

    new_text = "Maya wants to see the Fushimi Inari shrine at dawn"
    edit = api.patch(
        "/v1/memories/e1",
        json={"content": new_text, "refresh": True},
        headers={**acme, "If-Match": f'"{before["version"]}"'},
    )
    assert edit.status_code == 202, edit.text
    accepted = edit.json()
    assert accepted["version"] > before["version"] and accepted["memory_ids"] == ["e1"]
    assert wait_task(api, acme, accepted["task_id"])["indexed"] == 1
    after = api.get("/v1/memories/e1", headers=acme).json()
    assert (after["content"], after["version"]) == (new_text, accepted["version"])
    assert {k: after[k] for k in KEPT} == {k: before[k] for k in KEPT}
    assert _vector(client, alias, "acme", "e1") != vec  # re-embedded
    # what the fields are for still finds it: conversation, node, time
    for params in ({"conversation_id": "trip"}, {"node": "Travel"}, {"since": "2026-03-01T00:00:00Z"}):
        listed = api.get("/v1/memories", params=params, headers=acme).json()["memories"]
        assert [m["memory_id"] for m in listed] == ["e1"], params
    history = api.get("/v1/memories/e1/history", headers=acme).json()["versions"]
    assert [(h["replaced_by"], h["memory"]["content"]) for h in history] == [("patch", before["content"])]

    # the text and a field at once: that field changes, the others stay
    both = api.patch(
        "/v1/memories/e1", json={"content": "Maya and Ken: Fushimi Inari", "source": "notes"}, headers=acme
    )
    assert both.status_code == 202, both.text
    wait_task(api, acme, both.json()["task_id"])
    now = api.get("/v1/memories/e1", headers=acme).json()
    assert (now["content"], now["source"], now["conversation_id"]) == ("Maya and Ken: Fushimi Inari", "notes", "trip")
    assert api.patch("/v1/memories/e1", json={"content": "x"}, headers={**acme, "If-Match": '"1"'}).status_code == 412

    # PUT is the full replace (docs/api.md): what it does not name is gone
    put = api.put("/v1/memories/e1", json={"content": "replaced outright", "refresh": True}, headers=acme)
    assert put.status_code == 202, put.text
    wait_task(api, acme, put.json()["task_id"])
    replaced = api.get("/v1/memories/e1", headers=acme).json()
    assert replaced["content"] == "replaced outright"
    assert all(replaced[k] is None for k in KEPT), replaced


def test_cli_update_keeps_what_it_does_not_name_and_sets_what_it_does(live_api, api, make_tenant) -> None:
    """`memories update ID -c TEXT` is a text edit (PATCH); `--node/--time/--conversation/--source`
    change those fields too, `patch --time` changes the time alone, `update --replace` is the PUT."""
    import json

    from typer.testing import CliRunner

    from brain_search.commands.cli import app

    acme = make_tenant("acme")
    before = _post_full(api, acme, "e2", "the Kyoto ryokan is booked")
    api.app.state.brain.graph.create("acme", "Travel/Kyoto")
    env = {"BRAIN_API_URL": live_api, "BRAIN_API_KEY": acme["Authorization"].removeprefix("Bearer ")}
    runner = CliRunner()

    def run(*args: str) -> dict[str, Any]:
        out = runner.invoke(app, list(args), env=env)
        assert out.exit_code == 0, (args, out.output)
        got: dict[str, Any] = json.loads(runner.invoke(app, ["memories", "get", "e2", "--json"], env=env).output)
        return got

    edited = run("memories", "update", "e2", "-c", "the Kyoto ryokan is booked for two nights")
    assert edited["content"] == "the Kyoto ryokan is booked for two nights"
    assert {k: edited[k] for k in KEPT} == {k: before[k] for k in KEPT}

    moved = run(
        "memories", "update", "e2", "-c", "the ryokan moved to Kyoto station",
        "--node", "Travel/Kyoto", "--time", "2026-04-01T09:00:00Z", "--conversation", "trip-2", "--source", "email",
    )  # fmt: skip
    assert (moved["node_path"], moved["conversation_id"], moved["source"]) == ("Travel/Kyoto", "trip-2", "email")
    assert moved["timestamp"].startswith("2026-04-01T09:00:00") and moved["metadata"] == {"who": "Maya"}

    timed = run("memories", "patch", "e2", "--time", "2026-05-01T00:00:00+00:00")
    assert timed["timestamp"].startswith("2026-05-01T00:00:00") and timed["content"] == moved["content"]
    assert (timed["node_path"], timed["conversation_id"], timed["source"]) == ("Travel/Kyoto", "trip-2", "email")

    replaced = run("memories", "update", "e2", "-c", "only this text", "--replace")
    assert replaced["content"] == "only this text" and all(replaced[k] is None for k in KEPT), replaced
