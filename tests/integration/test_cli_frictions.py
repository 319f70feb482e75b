"""Issue 55 item 7, the CLI side, through typer's CliRunner against the real stack: full ids (what
`memories get` takes), `memories list` a page at a time, errors in the flags' words, and the
recall flags `--include-superseded` and `--expand-related`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from brain_search.commands.cli import app
from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration

LONG_ID = "a-rather-long-memory-id-that-the-terminal-must-show-whole"


def _write(api: Any, headers: dict[str, str], memories: list[dict[str, Any]]) -> None:
    body = {"memories": memories, "refresh": True, "create_nodes": True}
    r = api.post("/v1/memories", json=body, headers=headers)
    assert r.status_code == 202, r.text
    assert wait_task(api, headers, r.json()["task_id"])["indexed"] == len(memories)


def _cli(live_api: str, key: str, columns: int = 80) -> Any:
    runner = CliRunner()
    env = {"BRAIN_API_URL": live_api, "BRAIN_API_KEY": key, "COLUMNS": str(columns), "BRAIN_TENANT": None}

    def run(*args: str) -> Any:
        return runner.invoke(app, list(args), env=env)

    return run


def test_full_ids_and_memories_list(live_api, api, make_tenant) -> None:
    headers = make_tenant("fric")
    cli = _cli(live_api, headers["Authorization"].split()[1])
    _write(
        api,
        headers,
        [
            {"content": "Ilse keeps the spare keys under the blue planter.", "memory_id": LONG_ID},
            *({"content": f"note {i} about the garden shed", "memory_id": f"note-{i}"} for i in range(4)),
        ],
    )

    # the ranked list and the tiered view print the whole id, and `memories get` takes it
    for view in ([], ["--tiered"]):
        out = cli("recall", "where are the spare keys", *view)
        assert out.exit_code == 0, out.output
        assert LONG_ID in out.output.split(), out.output
        assert all(len(line) <= 80 for line in out.output.splitlines()), out.output
    got = cli("memories", "get", LONG_ID)
    assert got.exit_code == 0 and "spare keys" in got.output, got.output

    # `memories list`: a page at a time, full ids, the next page's cursor printed
    first = cli("memories", "list", "--limit", "2")
    assert first.exit_code == 0, first.output
    cursor = first.output.split("--cursor", 1)[1].split()[0]
    seen = [w for w in first.output.split() if w == LONG_ID or w.startswith("note-")]
    rest = cli("memories", "list", "--limit", "10", "--cursor", cursor)
    assert rest.exit_code == 0 and "--cursor" not in rest.output, rest.output
    seen += [w for w in rest.output.split() if w == LONG_ID or w.startswith("note-")]
    assert sorted(seen) == sorted([LONG_ID, *(f"note-{i}" for i in range(4))]), (first.output, rest.output)
    listed = json.loads(cli("memories", "list", "--json").output)
    assert len(listed["memories"]) == 5 and listed["next_cursor"] is None, listed
    bad = cli("memories", "list", "--until", "soon")
    assert bad.exit_code == 2 and "--until" in bad.output, bad.output


def test_errors_name_the_flags(live_api, api, make_tenant) -> None:
    headers = make_tenant("fric")
    cli = _cli(live_api, headers["Authorization"].split()[1])
    out = cli("recall", "equity", "--z", "2")
    assert out.exit_code == 2 and "--z: " in out.output and "z_value" not in out.output, out.output
    out = cli("recall", "equity", "--expand-related", "9")
    assert out.exit_code == 2 and "--expand-related: " in out.output, out.output
    out = cli("forget")
    assert out.exit_code == 1 and "pass --all" in out.output and "all: true" not in out.output, out.output
    out = cli("forget", "--node", "Nowhere/At/All")
    assert out.exit_code == 1 and "--node: " in out.output, out.output
    out = cli("recall", "equity", "--nodes", "Nowhere/At/All")
    assert out.exit_code == 1 and "--nodes: " in out.output, out.output


def test_recall_include_superseded_and_expand_related(live_api, api, make_tenant) -> None:
    headers = make_tenant("fric")
    cli = _cli(live_api, headers["Authorization"].split()[1], columns=120)
    _write(
        api,
        headers,
        [
            {"content": "I live in Berlin, in a flat in Kreuzberg.", "memory_id": "home-berlin"},
            {"content": "I moved: I live in Lisbon now.", "memory_id": "home-lisbon", "supersedes": ["home-berlin"]},
            {"content": "Maya wants to see the Fushimi Inari shrine.", "memory_id": "trip", "node_id": "Travel/Japan"},
            {"content": "The best ramen in Kyoto is near the station.", "memory_id": "ramen", "node_id": "Food/Ramen"},
        ],
    )
    plain = json.loads(cli("recall", "where do I live, Berlin", "--json").output)
    assert "home-berlin" not in [r["id"] for r in plain["results"]], plain
    out = cli("recall", "where do I live, Berlin", "--include-superseded", "--json")
    marked = {r["id"]: r["metadata"].get("superseded_by") for r in json.loads(out.output)["results"]}
    assert marked.get("home-berlin") == "home-lisbon", out.output
    out = cli("recall", "where do I live, Berlin", "--include-superseded")
    assert "(replaced by home-lisbon)" in out.output, out.output

    japan = api.get("/v1/nodes", params={"label": "Travel/Japan"}, headers=headers).json()["nodes"][0]["id"]
    ramen = api.get("/v1/nodes", params={"label": "Food/Ramen"}, headers=headers).json()["nodes"][0]["id"]
    assert api.post(f"/v1/nodes/{japan}/related/{ramen}", headers=headers).status_code == 200
    scoped = ["recall", "ramen in Kyoto", "--nodes", "Travel/Japan", "--json"]
    assert "ramen" not in [r["id"] for r in json.loads(cli(*scoped).output)["results"]]
    out = cli(*scoped, "--expand-related", "1")
    assert out.exit_code == 0, out.output
    assert "ramen" in [r["id"] for r in json.loads(out.output)["results"]], out.output
