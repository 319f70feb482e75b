"""Issue 54, items 2, 3, 4, 5 and 8 on the real stack (embedded mode): what is forgotten stays
forgotten (history included), a re-written document leaves no stale pieces, an id means one
thing, an edit is compare-and-set, and export → import keeps every field of a memory."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.integration.ingest_support import memory_ids, wait_task
from tests.integration.test_delete_wins import held

pytestmark = pytest.mark.integration


def _write(api: Any, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    r = api.post("/v1/memories", json={"refresh": True, **body}, headers=headers)
    assert r.status_code == 202, r.text
    done = wait_task(api, headers, r.json()["task_id"])
    assert done["state"] == "succeeded" and not done["failed"], done
    return done


def _node_task(api: Any, headers: dict[str, str], task_id: str, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        t = api.get(f"/v1/nodes/tasks/{task_id}", headers=headers)
        assert t.status_code == 200, t.text
        if t.json()["completed"]:
            return dict(t.json())
        assert time.monotonic() < deadline, t.json()
        time.sleep(0.2)


def _recalled(api: Any, headers: dict[str, str], query: str) -> list[str]:
    r = api.post("/v1/recall", json={"query": query, "limit": 20}, headers=headers)
    assert r.status_code == 200, r.text
    return [hit["id"] for hit in r.json()["results"]]


# ---------------------------------------------------------------------------------- item 4
def test_cascade_node_delete_forgets_history_and_wins_over_a_queued_write(api, make_tenant) -> None:
    """``DELETE /v1/nodes/{id}?cascade=true``: the memories, their history and their text are
    gone, and a write of one of them accepted before the delete does not bring it back."""
    acme = make_tenant("acme")
    state = api.app.state.brain
    secret = "Secret launch code name is BLUEHERON."
    _write(
        api, acme, {"content": "launch code name draft", "memory_id": "n1", "node_id": "Launch", "create_nodes": True}
    )
    patch = api.patch("/v1/memories/n1", json={"content": secret, "refresh": True}, headers=acme)
    assert patch.status_code == 202, patch.text
    assert wait_task(api, acme, patch.json()["task_id"])["indexed"] == 1
    _write(api, acme, {"content": "the launch is on a Tuesday", "memory_id": "n2", "node_id": "Launch"})
    assert api.patch("/v1/memories/n1", json={"source": "notes"}, headers=acme).status_code == 200
    assert len(api.get("/v1/memories/n1/history", headers=acme).json()["versions"]) == 2
    node = api.get("/v1/nodes", params={"label": "Launch"}, headers=acme).json()["nodes"][0]

    with held(state) as gate:  # a rewrite of n1, accepted before the delete, waits to be written
        queued = api.post("/v1/memories", json={"content": secret, "memory_id": "n1"}, headers=acme)
        assert queued.status_code == 202 and gate.waiting.wait(60)
        r = api.delete(f"/v1/nodes/{node['id']}", params={"cascade": "true"}, headers=acme)
        assert r.status_code == 202, r.text
        task = _node_task(api, acme, r.json()["task"]["task_id"])
        assert (task["state"], task["deleted"]) == ("completed", 2), task
    done = wait_task(api, acme, queued.json()["task_id"])
    assert (done["indexed"], done["superseded"]) == (0, 1), done

    for m in ("n1", "n2"):
        assert api.get(f"/v1/memories/{m}", headers=acme).status_code == 404
        assert api.get(f"/v1/memories/{m}/history", headers=acme).status_code == 404
    assert api.get("/v1/memories", headers=acme).json()["memories"] == []
    assert "n1" not in _recalled(api, acme, "launch code name BLUEHERON")
    history = state.client.search(
        index=state.ingest.history.index, body={"query": {"term": {"memory_id": "n1"}}}, params={"size": 10}
    )
    assert history["hits"]["hits"] == []  # the text is gone from the engine, not only from the API


# ---------------------------------------------------------------------------------- item 2
def _document(topic: str, sentences: int) -> str:
    return " ".join(
        f"Sentence {i} of the {topic} report says the {topic} figure {i} went up." for i in range(sentences)
    )


def _listed(api: Any, headers: dict[str, str]) -> dict[str, str]:
    r = api.get("/v1/memories", headers=headers)
    assert r.status_code == 200, r.text
    return {m["memory_id"]: m["content"] for m in r.json()["memories"]}


def test_a_rewritten_document_leaves_no_stale_pieces(api, make_tenant, client, stack_settings) -> None:
    """Re-posting a chunked document whole, re-chunking it into fewer pieces, or chunking a
    memory that was whole: only what the last write made is listed, readable and recalled."""
    acme = make_tenant("acme")
    long_text, shorter = _document("harbour", 60), _document("lighthouse", 22)
    for m in ("d", "e"):
        _write(api, acme, {"content": long_text, "memory_id": m, "chunk": True})
    pieces = sorted(k for k in _listed(api, acme) if k.startswith("d#"))
    assert len(pieces) == 6, pieces
    _write(api, acme, {"content": "the harbour report is short now", "memory_id": "d"})
    _write(api, acme, {"content": shorter, "memory_id": "e", "chunk": True})
    _write(api, acme, {"content": "a whole memory first", "memory_id": "f"})
    _write(api, acme, {"content": shorter, "memory_id": "f", "chunk": True})

    listed = _listed(api, acme)
    assert sorted(listed) == ["d", "e#0", "e#1", "f#0", "f#1"], sorted(listed)
    assert all("lighthouse" in listed[m] for m in ("e#0", "e#1", "f#0", "f#1"))
    for gone in ["d#0", "d#5", "e#2", "e#5", "f"]:
        assert api.get(f"/v1/memories/{gone.replace('#', '%23')}", headers=acme).status_code == 404, gone
    assert sorted(memory_ids(client, stack_settings, "acme")) == sorted(listed)
    recalled = _recalled(api, acme, "harbour report figure went up")
    assert recalled and set(recalled) <= set(listed), recalled


# ---------------------------------------------------------------------------------- item 3
def _refused(r: Any, field: str) -> str:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"][0]
    assert detail["loc"][-1] == field, detail
    return str(detail["msg"])


def test_an_id_means_one_thing(api, make_tenant) -> None:
    """``doc#1`` is piece 1 of ``doc`` and nothing else; ``a/history`` is the route of ``a``'s
    history, never a memory: a write that would make an id mean two things is a 422 naming the
    field, and nothing stored changes."""
    acme = make_tenant("acme")
    _write(api, acme, {"content": _document("harbour", 22), "memory_id": "doc", "chunk": True})
    piece = api.get("/v1/memories/doc%231", headers=acme).json()
    assert piece["metadata"]["chunk_of"] == "doc"

    for body, field in [
        ({"content": "a memory named like a piece", "memory_id": "doc#1"}, "memory_id"),
        ({"content": "a memory named like a piece", "memory_id": "y#0"}, "memory_id"),
        (
            {"content": "a piece of nothing", "memory_id": "doc#7", "metadata": {"chunk_of": "x", "chunk_index": 7}},
            "memory_id",
        ),
        ({"content": "long " * 400, "memory_id": "doc#1", "chunk": True}, "memory_id"),
        ({"content": "claims to be a piece", "memory_id": "z", "metadata": {"chunk_of": "doc"}}, "metadata"),
        ({"content": "a memory named like a route", "memory_id": "a/history"}, "memory_id"),
    ]:
        msg = _refused(api.post("/v1/memories", json=body, headers=acme), field)
        assert "'#'" in msg or "'/'" in msg or "reserved" in msg, msg
    assert api.get("/v1/memories/doc%231", headers=acme).json()["content"] == piece["content"]
    assert sorted(_listed(api, acme)) == ["doc#0", "doc#1"]

    # a piece written as that piece (what `brain-search export` writes) is taken, and a piece
    # changed by PUT or PATCH stays that piece
    exported = {k: piece[k] for k in ("memory_id", "content", "metadata")}
    _write(api, acme, exported)
    put = api.put("/v1/memories/doc%231", json={"content": "piece one, rewritten", "refresh": True}, headers=acme)
    assert put.status_code == 202, put.text
    assert wait_task(api, acme, put.json()["task_id"])["indexed"] == 1
    assert api.get("/v1/memories/doc%231", headers=acme).json()["metadata"] == piece["metadata"]

    # `a/history` is the history of `a`, whichever way the slash is written
    _write(api, acme, {"content": "first", "memory_id": "a"})
    assert api.patch("/v1/memories/a", json={"source": "notes"}, headers=acme).status_code == 200
    for path in ("/v1/memories/a/history", "/v1/memories/a%2Fhistory"):
        body = api.get(path, headers=acme).json()
        assert body["memory_id"] == "a" and len(body["versions"]) == 1, body
    _write(api, acme, {"content": "a whole memory", "memory_id": "plain"})
    _refused(api.patch("/v1/memories/plain", json={"metadata": {"chunk_of": "doc"}}, headers=acme), "metadata")


# ---------------------------------------------------------------------------------- item 8
@contextmanager
def _between_read_and_write(state: Any, action: Callable[[], object]) -> Iterator[None]:
    """Run ``action`` once inside the next edit, right after it read the stored memory."""
    memories = state.ingest.memories
    done: list[bool] = []
    names = [n for n in ("read", "stored") if hasattr(memories, n)]

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            if not done:
                done.append(True)
                action()
            return out

        return call

    for name in names:
        setattr(memories, name, wrap(getattr(memories, name)))
    try:
        yield
    finally:
        for name in names:
            delattr(memories, name)


def test_an_edit_is_compare_and_set(api, make_tenant) -> None:
    """A PATCH that read before a DELETE landed, two PATCHes with the same If-Match, a PATCH
    while a PUT is queued: the loser gets a 409 or a 412, nothing deleted comes back, nothing
    written is overwritten unseen."""
    from brain_search.ingest.models import MemoryPatch

    acme = make_tenant("acme")
    state = api.app.state.brain
    ingest, s = state.ingest, state.settings

    # a PATCH (fields, then text) racing a DELETE: the DELETE wins, history included
    for body in ({"source": "notes"}, {"content": "the budget is 70k", "refresh": True}):
        _write(api, acme, {"content": "the budget is 40k", "memory_id": "raced"})
        with _between_read_and_write(state, lambda: ingest.delete("acme", "raced")):
            r = api.patch("/v1/memories/raced", json=body, headers=acme)
        assert r.status_code == 409, r.text
        assert api.get("/v1/memories/raced", headers=acme).status_code == 404
        assert api.get("/v1/memories/raced/history", headers=acme).status_code == 404
        assert "raced" not in _listed(api, acme)

    # two PATCHes (fields, then text) with the same If-Match: one wins, the other is a 412
    for mine, theirs in (({"source": "mine"}, {"source": "theirs"}), ({"content": "mine"}, {"content": "theirs"})):
        _write(api, acme, {"content": "the offsite is in Lisbon", "memory_id": "both"})
        v = api.get("/v1/memories/both", headers=acme).json()["version"]
        tag = f'"{v}"'

        def other(theirs: dict[str, Any] = theirs, tag: str = tag) -> None:
            ingest.edit("acme", "both", MemoryPatch(**theirs, refresh=True), s, nodes=state.graph, if_match=tag)

        with _between_read_and_write(state, other):
            r = api.patch("/v1/memories/both", json={**mine, "refresh": True}, headers={**acme, "If-Match": tag})
        assert r.status_code == 412, r.text
        assert r.headers["ETag"] != tag
        deadline = time.monotonic() + 30
        while (now := api.get("/v1/memories/both", headers=acme).json()) and now.get("source") != "theirs":
            if now["content"] == "theirs" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert now.get("source") == "theirs" or now["content"] == "theirs", now
        assert "mine" not in (now.get("source"), now["content"]), now

    # a PATCH while a PUT of the memory is queued: refused, and the PUT lands
    _write(api, acme, {"content": "the launch is in March", "memory_id": "queued"})
    with held(state) as gate:
        put = api.put("/v1/memories/queued", json={"content": "the launch moved to May"}, headers=acme)
        assert put.status_code == 202 and gate.waiting.wait(60)
        r = api.patch("/v1/memories/queued", json={"source": "notes"}, headers=acme)
        assert r.status_code == 409, r.text
    done = wait_task(api, acme, put.json()["task_id"])
    assert (done["indexed"], done["superseded"]) == (1, 0), done
    now = api.get("/v1/memories/queued", headers=acme).json()
    assert (now["content"], now.get("source"), now["version"]) == (
        "the launch moved to May",
        None,
        put.json()["version"],
    )


# ---------------------------------------------------------------------------------- item 5
STAMPS = ("version", "ingested_at")
"""what the write itself stamps on a memory (when, in which order): the rest must survive"""


def test_export_import_keeps_every_field(live_api, api, make_tenant, tmp_path) -> None:
    """`brain-search export` → `brain-search import` into another tenant: every memory comes
    back whole (every field but the write's own stamps), and a recall in the copy leaves out what
    was superseded or expired, as it does in the original."""
    from typer.testing import CliRunner

    from brain_search.commands.cli import app

    acme, copy = make_tenant("acme"), make_tenant("acme-copy")
    memories = [
        {"memory_id": "old", "content": "the offsite venue is the Lisbon hotel", "node_id": "Work/Offsite"},
        {
            "memory_id": "new",
            "content": "the offsite venue moved from the Lisbon hotel to Porto",
            "node_id": "Work/Offsite",
            "supersedes": ["old"],
            "timestamp": "2026-03-02T10:00:00+00:00",
            "conversation_id": "c1",
            "source": "chat",
            "metadata": {"speaker": "Priya", "n": [1, {"deep": True}]},
        },
        {
            "memory_id": "gone",
            "content": "the offsite venue hold at the Lisbon hotel expires",
            "timestamp": "2026-01-01T00:00:00+00:00",
            "valid_until": "2026-01-15T00:00:00+00:00",
        },
    ]
    _write(api, acme, {"memories": memories, "create_nodes": True})
    _write(api, acme, {"content": _document("offsite", 22), "memory_id": "doc", "chunk": True})
    # two earlier versions of "old" (issue 66 item 8: an import answered `versions: []`)
    edit = api.patch(
        "/v1/memories/old", json={"content": "the offsite venue is the Lisbon hotel, booked"}, headers=acme
    )
    wait_task(api, acme, edit.json()["task_id"])
    assert api.patch("/v1/memories/old", json={"source": "notes"}, headers=acme).status_code == 200
    earlier = api.get("/v1/memories/old/history", headers=acme).json()["versions"]
    assert [v["replaced_by"] for v in earlier] == ["patch", "patch"], earlier

    out = tmp_path / "acme.jsonl"
    runner = CliRunner()
    env = {"BRAIN_API_URL": live_api}
    res = runner.invoke(app, ["export", str(out)], env={**env, "BRAIN_API_KEY": acme["Authorization"][7:]})
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["import", str(out)], env={**env, "BRAIN_API_KEY": copy["Authorization"][7:]})
    assert res.exit_code == 0, res.output

    def whole(headers: dict[str, str]) -> list[dict[str, Any]]:
        got = api.get("/v1/memories", params={"limit": 1000}, headers=headers).json()["memories"]
        return [{k: v for k, v in m.items() if k not in STAMPS} for m in got]

    original = whole(acme)
    assert [m["memory_id"] for m in original] == ["doc#0", "doc#1", "gone", "new", "old"]
    assert whole(copy) == original
    copied = api.get("/v1/memories/old/history", headers=copy).json()["versions"]
    assert copied == earlier  # the same versions, times and texts
    for headers in (acme, copy):
        hits = _recalled(api, headers, "which hotel is the offsite venue in Lisbon")
        assert hits and hits[0] == "new" and not {"old", "gone"} & set(hits), hits
