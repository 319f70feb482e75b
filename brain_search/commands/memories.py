"""CLI: `brain-search memories ...`: read, change (its text or its fields), delete one memory and see
its history, through the HTTP API (``--api-url`` / ``BRAIN_API_URL``, ``--api-key`` / ``BRAIN_API_KEY``).
A change keeps every field it does not name (PATCH); `update --replace` is the whole-memory PUT."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any
from urllib.parse import quote

import typer
from brain_search_client.models.memory import EXPORTED_FIELDS

from brain_search.commands.common import (
    AGENT_OPT,
    CONVERSATION_OPT,
    CREATE_NODES_OPT,
    FIELD_FLAGS,
    JSON_OPT,
    KEY_OPT,
    NODE_OPT,
    OWNER_FLAGS,
    SHARED_OPT,
    SOURCE_OPT,
    TIME_OPT,
    URL_OPT,
    USER_OPT,
    Api,
    console,
    fields,
    iso_time,
    iso_until,
    owner,
)

memories_app = typer.Typer(
    help="Your tenant's memories: list them; one memory: get, update (text), patch (fields), history, delete."
)
IF_MATCH_OPT = typer.Option(None, "--if-match", help="only if the stored version is this one (else 412)")


def register(app: typer.Typer) -> None:
    app.add_typer(memories_app, name="memories")


def _path(memory_id: str, suffix: str = "") -> str:
    return f"/v1/memories/{quote(memory_id, safe='')}{suffix}"


def _if_match(version: str | None) -> dict[str, str]:
    return {"If-Match": f'"{version}"'} if version else {}


def _show(body: Any, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(body, indent=2))
        return
    shown = ("memory_id", "version", "content", "node_path", "timestamp", "source", "conversation_id", "user_id")
    for key in (*shown, "agent_id", "metadata"):
        if body.get(key) is not None:
            console.print(f"[bold]{key}[/bold]: {body[key]}", highlight=False)


@memories_app.command("list")
def list_memories(
    node: str = typer.Option(None, "--node", help="only this node's subtree (id or label path)"),
    conversation: str = typer.Option(None, "--conversation", help="only this conversation"),
    source: str = typer.Option(None, "--source", help="only this source"),
    since: str = typer.Option(None, "--since", callback=iso_time, help="only at or after this time (ISO 8601)"),
    until: str = typer.Option(
        None, "--until", callback=iso_until, help="only at or before this time (ISO 8601; a date: to its end)"
    ),
    limit: int = typer.Option(20, "--limit", min=1, max=1000, help="memories a page"),
    cursor: str = typer.Option(None, "--cursor", help="the next page: the cursor the last page printed"),
    user: str = USER_OPT,
    agent: str = AGENT_OPT,
    include_shared: bool = SHARED_OPT,
    url: str = URL_OPT,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """List your memories (--user: one user's) in id order, a page at a time: each with its full
    id (what get, update and delete take), date, node and a cut of its text; then the command for
    the next page."""
    from brain_search.commands.render import short_date, snippet

    params = {
        "node": node,
        "conversation_id": conversation,
        "source": source,
        "since": since,
        "until": until,
        "limit": limit,
        "cursor": cursor,
        **owner(user, agent, include_shared),
    }
    flags = {"node": "--node", "since": "--since", "until": "--until", "limit": "--limit", "cursor": "--cursor"}
    flags |= OWNER_FLAGS
    page = Api(url, key, flags=flags).call("GET", "/v1/memories", params={k: v for k, v in params.items() if v})
    if as_json:
        typer.echo(json.dumps(page, indent=2))
        return
    columns = max(40, console.width)
    for m in page["memories"]:
        when = short_date(datetime.fromisoformat(m["timestamp"]) if m.get("timestamp") else None)
        node_path = f"[{m['node_path']}] " if m.get("node_path") else ""
        console.print(f"{m['memory_id']}  {when}", highlight=False, markup=False)
        console.print("   " + snippet(node_path + m["content"], columns - 3), highlight=False, markup=False)
    if not page["memories"]:
        console.print("no memories", highlight=False)
    if page["next_cursor"]:
        console.print(f"more: --cursor {page['next_cursor']}", highlight=False, markup=False, soft_wrap=True)


@memories_app.command("get")
def get(
    memory_id: str,
    user: str = USER_OPT,
    agent: str = AGENT_OPT,
    include_shared: bool = SHARED_OPT,
    url: str = URL_OPT,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Show one memory and its version (--user: only if it is that user's)."""
    params = owner(user, agent, include_shared)
    _show(Api(url, key, flags=OWNER_FLAGS).call("GET", _path(memory_id), params=params), as_json)


@memories_app.command("update")
def update(
    memory_id: str,
    content: str = typer.Option(..., "--content", "-c", help="the new text (re-embedded)"),
    node: str = NODE_OPT,
    when: str = TIME_OPT,
    conversation: str = CONVERSATION_OPT,
    source: str = SOURCE_OPT,
    create_nodes: bool = CREATE_NODES_OPT,
    replace: bool = typer.Option(
        False, "--replace", help="replace the whole memory (PUT): the fields not given here are cleared"
    ),
    if_match: str = IF_MATCH_OPT,
    wait: bool = typer.Option(True, help="wait until the new version is stored and searchable"),
    user: str = USER_OPT,
    agent: str = AGENT_OPT,
    url: str = URL_OPT,
    key: str = KEY_OPT,
) -> None:
    """Change a memory's text (PATCH, re-embedded) and the fields given; every other field (node,
    time, conversation, source, metadata) is kept. The version it replaces goes to its history."""
    api = Api(url, key, flags=FIELD_FLAGS)
    body = {"content": content, **fields(node, when, conversation, source), "refresh": wait}
    if create_nodes:
        body["create_nodes"] = True
    method, params = "PUT" if replace else "PATCH", owner(user, agent)
    accepted = api.call(method, _path(memory_id), json=body, params=params, headers=_if_match(if_match))
    if wait:
        api.stored(accepted["task_id"])
    console.print(f"{memory_id}: version {accepted['version']} ({'stored' if wait else 'queued'})")


@memories_app.command("patch")
def patch(
    memory_id: str,
    source: str = SOURCE_OPT,
    conversation: str = CONVERSATION_OPT,
    node: str = NODE_OPT,
    when: str = TIME_OPT,
    metadata: str = typer.Option(None, "--metadata", help="a JSON object (replaces the metadata)"),
    create_nodes: bool = CREATE_NODES_OPT,
    if_match: str = IF_MATCH_OPT,
    user: str = USER_OPT,
    agent: str = AGENT_OPT,
    url: str = URL_OPT,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Change fields of a memory at once, keeping its text and vector (the text: `update`); its
    user and agent stay."""
    body = fields(node, when, conversation, source)
    if create_nodes:
        body["create_nodes"] = True
    if metadata is not None:
        try:
            body["metadata"] = json.loads(metadata)
        except ValueError as exc:
            console.print(f"[bold red]error:[/bold red] --metadata is not JSON: {exc}")
            raise typer.Exit(2) from None
    api = Api(url, key, flags=FIELD_FLAGS)
    params = owner(user, agent)
    _show(api.call("PATCH", _path(memory_id), json=body, params=params, headers=_if_match(if_match)), as_json)


@memories_app.command("history")
def history(
    memory_id: str,
    user: str = USER_OPT,
    agent: str = AGENT_OPT,
    include_shared: bool = SHARED_OPT,
    url: str = URL_OPT,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """The versions PUT and PATCH replaced, newest first."""
    params = owner(user, agent, include_shared)
    body = Api(url, key, flags=OWNER_FLAGS).call("GET", _path(memory_id, "/history"), params=params)
    if as_json:
        typer.echo(json.dumps(body, indent=2))
        return
    for v in body["versions"]:
        console.print(
            f"{v['version']}  {v['replaced_by']:5}  {v['replaced_at']}  {v['memory']['content'][:80]}", highlight=False
        )


@memories_app.command("delete")
def delete(
    memory_id: str, user: str = USER_OPT, agent: str = AGENT_OPT, url: str = URL_OPT, key: str = KEY_OPT
) -> None:
    """Delete a memory (its pieces, dead letters and history too); --user: only if it is theirs."""
    Api(url, key, flags=OWNER_FLAGS).call("DELETE", _path(memory_id), params=owner(user, agent))
    console.print(f"{memory_id}: deleted")


EXPORT_FIELDS = EXPORTED_FIELDS
"""every field a write takes (``MemoryIn``, what `import` reads back), the node apart"""


def export_line(memory: dict[str, Any]) -> dict[str, Any]:
    """One memory as a line `brain-search import` (and `ingest`) reads back: every field a write
    takes (supersedes and valid_until included, so what was replaced or expired stays so; a
    piece of a chunked memory with its chunk_* metadata), the node by its label path (so it can
    be created in another tenant or deployment)."""
    line = {k: memory[k] for k in EXPORT_FIELDS if memory.get(k) is not None}
    if memory.get("node_path"):
        line["node_id"] = memory["node_path"]
    return line


def export(
    out: str = typer.Argument(..., help="JSON Lines file to write ('-' for stdout)"),
    node: str = typer.Option(None, "--node", help="only this node's subtree (id or label path)"),
    conversation: str = typer.Option(None, "--conversation"),
    source: str = typer.Option(None, "--source"),
    user: str = typer.Option(None, "--user", help="only this user's memories (a user's key: its own, always)"),
    agent: str = AGENT_OPT,
    include_shared: bool = SHARED_OPT,
    url: str = URL_OPT,
    key: str = KEY_OPT,
) -> None:
    """Write the tenant's memories (or those matching: --user for one user's) to JSON Lines, each
    with its user and agent and its earlier versions; `brain-search import` reads them back."""
    import sys

    api = Api(url, key, flags=OWNER_FLAGS)
    params: dict[str, Any] = {
        "node": node,
        "conversation_id": conversation,
        "source": source,
        "limit": 1000,
        "history": "true",
    }
    params |= owner(user, agent, include_shared)
    params = {k: v for k, v in params.items() if v is not None}
    written = 0
    fh = sys.stdout if out == "-" else open(out, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        while True:
            page = api.call("GET", "/v1/memories", params=params)
            versions = page.get("history") or {}
            for memory in page["memories"]:
                line = export_line(memory)
                if versions.get(memory["memory_id"]):
                    line["history"] = versions[memory["memory_id"]]
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
                written += 1
            if not page["next_cursor"]:
                break
            params["cursor"] = page["next_cursor"]
    finally:
        if fh is not sys.stdout:
            fh.close()
    if out != "-":
        console.print(f"{written} memories written to {out}")


def forget(
    conversation: str = typer.Option(None, "--conversation", help="every memory of this conversation"),
    node: str = typer.Option(None, "--node", help="every memory under this node (id or label path)"),
    source: str = typer.Option(None, "--source"),
    since: str = typer.Option(None, "--since", callback=iso_time, help="ISO 8601"),
    until: str = typer.Option(None, "--until", callback=iso_until, help="ISO 8601 (a date alone: to its end)"),
    everything: bool = typer.Option(False, "--all", help="required to forget every memory of the tenant (or --user)"),
    user: str = typer.Option(None, "--user", help="only this user's memories (with --all: the user's every trace)"),
    agent: str = AGENT_OPT,
    wait: bool = typer.Option(True, help="wait for the task and print its counts"),
    url: str = URL_OPT,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Forget every memory matching the filters (with their pieces, history and dead letters)."""
    flags = {"conversation_id": "--conversation", "node": "--node", "source": "--source"}
    api = Api(url, key, flags={**flags, **OWNER_FLAGS, "since": "--since", "until": "--until"})
    body: dict[str, Any] = {
        "conversation_id": conversation,
        "node": node,
        "source": source,
        "since": since,
        "until": until,
        "all": everything or None,
        **owner(user, agent),
    }
    status = api.call("POST", "/v1/forget", json={k: v for k, v in body.items() if v is not None})
    follow_forget(api, status, wait, as_json)


def follow_forget(api: Api, status: dict[str, Any], wait: bool, as_json: bool) -> None:
    """Wait for a forget task (``wait``) and print what it removed; exit 1 when it failed."""
    while wait and status["state"] == "running":
        time.sleep(0.3)
        status = api.call("GET", f"/v1/forget/{status['task_id']}")
    if as_json:
        typer.echo(json.dumps(status, indent=2))
        return
    kinds = ("memories", "history", "dead_letters", "task_records", "feedback")
    counts = ", ".join(f"{status[k]} {k.replace('_', ' ')}" for k in kinds if k in status)
    console.print(f"{status['task_id']}: {status['state']} ({counts})", highlight=False)
    if status["state"] == "failed":
        console.print(f"[bold red]error:[/bold red] {status.get('error')}")
        raise typer.Exit(1)
