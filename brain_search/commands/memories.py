"""CLI: `brain-search memories ...`: read, change (its text or its fields), delete one memory and see
its history, through the HTTP API (``--api-url`` / ``BRAIN_API_URL``, ``--api-key`` / ``BRAIN_API_KEY``).
A change keeps every field it does not name (PATCH); `update --replace` is the whole-memory PUT."""

from __future__ import annotations

import json
from typing import Any

import typer
from brain_search_client import BrainClient
from brain_search_client.models.forget import ForgetStatus
from brain_search_client.models.ingest import MemoryOut, ReplaceAccepted

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
    printed,
    tenant_api,
)

memories_app = typer.Typer(
    help="Your tenant's memories: list them; one memory: get, update (text), patch (fields), history, delete."
)
IF_MATCH_OPT = typer.Option(None, "--if-match", help="only if the stored version is this one (else 412)")


def register(app: typer.Typer) -> None:
    app.add_typer(memories_app, name="memories")


def _version(if_match: str | None) -> int | None:
    """``--if-match``: a version (the ETag's number, quotes or not)."""
    if if_match is None:
        return None
    try:
        return int(if_match.strip().strip('"'))
    except ValueError:
        console.print(f"[bold red]error:[/bold red] --if-match: {if_match!r} is not a version (a number)")
        raise typer.Exit(2) from None


def _show(memory: MemoryOut, as_json: bool) -> None:
    if as_json:
        typer.echo(printed(memory))
        return
    body = memory.model_dump(mode="json")
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
    *,
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
    from brain_search_client.render import short_date, snippet

    flags = {"node": "--node", "since": "--since", "until": "--until", "limit": "--limit", "cursor": "--cursor"}
    flags |= OWNER_FLAGS
    named = {"node": node, "conversation_id": conversation, "source": source, "since": since, "until": until}
    filters: dict[str, Any] = {k: v for k, v in named.items() if v}
    scope = owner(user, agent, include_shared)
    page = tenant_api(url, key, flags)(lambda c: c.memories.list(limit=limit, cursor=cursor, **filters, **scope))
    if as_json:
        typer.echo(printed(page))
        return
    columns = max(40, console.width)
    for m in page.memories:
        when = short_date(m.timestamp)
        node_path = f"[{m.node_path}] " if m.node_path else ""
        console.print(f"{m.memory_id}  {when}", highlight=False, markup=False)
        console.print("   " + snippet(node_path + m.content, columns - 3), highlight=False, markup=False)
    if not page.memories:
        console.print("no memories", highlight=False)
    if page.next_cursor:
        console.print(f"more: --cursor {page.next_cursor}", highlight=False, markup=False, soft_wrap=True)


@memories_app.command("get")
def get(
    memory_id: str,
    user: str = USER_OPT,
    agent: str = AGENT_OPT,
    include_shared: bool = SHARED_OPT,
    *,
    url: str = URL_OPT,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Show one memory and its version (--user: only if it is that user's)."""
    scope = owner(user, agent, include_shared)
    _show(tenant_api(url, key, OWNER_FLAGS)(lambda c: c.memories.get(memory_id, **scope)), as_json)


@memories_app.command("update")
def update(
    memory_id: str,
    content: str = typer.Option(..., "--content", "-c", help="the new text (re-embedded)"),
    node: str = NODE_OPT,
    when: str = TIME_OPT,
    *,
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
    api = tenant_api(url, key, FIELD_FLAGS)
    given: dict[str, Any] = {**fields(node, when, conversation, source)}
    if create_nodes:
        given["create_nodes"] = True
    version, scope = _version(if_match), owner(user, agent)

    def change(c: BrainClient) -> ReplaceAccepted | MemoryOut:
        if replace:
            return c.memories.replace(memory_id, content, if_version=version, wait=wait, **given, **scope)
        return c.memories.update(memory_id, content=content, if_version=version, wait=wait, **given, **scope)

    accepted = api(change)
    console.print(f"{memory_id}: version {accepted.version} ({'stored' if wait else 'queued'})")


@memories_app.command("patch")
def patch(
    memory_id: str,
    source: str = SOURCE_OPT,
    conversation: str = CONVERSATION_OPT,
    node: str = NODE_OPT,
    *,
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
    body: dict[str, Any] = fields(node, when, conversation, source)
    if create_nodes:
        body["create_nodes"] = True
    if metadata is not None:
        try:
            body["metadata"] = json.loads(metadata)
        except ValueError as exc:
            console.print(f"[bold red]error:[/bold red] --metadata is not JSON: {exc}")
            raise typer.Exit(2) from None
    version, scope = _version(if_match), owner(user, agent)
    changed = tenant_api(url, key, FIELD_FLAGS)(
        lambda c: c.memories.update(memory_id, if_version=version, **body, **scope)
    )
    assert isinstance(changed, MemoryOut)  # no new text: changed at once
    _show(changed, as_json)


@memories_app.command("history")
def history(
    memory_id: str,
    user: str = USER_OPT,
    agent: str = AGENT_OPT,
    include_shared: bool = SHARED_OPT,
    *,
    url: str = URL_OPT,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """The versions PUT and PATCH replaced, newest first."""
    scope = owner(user, agent, include_shared)
    found = tenant_api(url, key, OWNER_FLAGS)(lambda c: c.memories.history(memory_id, **scope))
    if as_json:
        typer.echo(printed(found))
        return
    for v in found.model_dump(mode="json")["versions"]:
        console.print(
            f"{v['version']}  {v['replaced_by']:5}  {v['replaced_at']}  {v['memory']['content'][:80]}", highlight=False
        )


@memories_app.command("delete")
def delete(
    memory_id: str, user: str = USER_OPT, agent: str = AGENT_OPT, url: str = URL_OPT, *, key: str = KEY_OPT
) -> None:
    """Delete a memory (its pieces, dead letters and history too); --user: only if it is theirs."""
    scope = owner(user, agent)
    tenant_api(url, key, OWNER_FLAGS)(lambda c: c.memories.delete(memory_id, **scope))
    console.print(f"{memory_id}: deleted")


def export(
    out: str = typer.Argument(..., help="JSON Lines file to write ('-' for stdout)"),
    node: str = typer.Option(None, "--node", help="only this node's subtree (id or label path)"),
    conversation: str = typer.Option(None, "--conversation"),
    source: str = typer.Option(None, "--source"),
    *,
    user: str = typer.Option(None, "--user", help="only this user's memories (a user's key: its own, always)"),
    agent: str = AGENT_OPT,
    include_shared: bool = SHARED_OPT,
    url: str = URL_OPT,
    key: str = KEY_OPT,
) -> None:
    """Write the tenant's memories (or those matching: --user for one user's) to JSON Lines, each
    with its user and agent and its earlier versions; `brain-search import` reads them back."""
    import sys

    api = tenant_api(url, key, OWNER_FLAGS)
    named = {"node": node, "conversation_id": conversation, "source": source}
    filters: dict[str, Any] = {k: v for k, v in named.items() if v}
    scope = owner(user, agent, include_shared)
    written = 0
    fh = sys.stdout if out == "-" else open(out, "w", encoding="utf-8")  # noqa: SIM115 - closed below

    def write_all(c: BrainClient) -> None:
        nonlocal written
        for line in c.memories.export(**filters, **scope):
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            written += 1

    try:
        api(write_all)
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
    *,
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
    api = tenant_api(url, key, {**flags, **OWNER_FLAGS, "since": "--since", "until": "--until"})
    filters: dict[str, Any] = {"conversation_id": conversation, "node": node, "source": source}
    filters |= {"since": since, "until": until, **owner(user, agent)}
    filters = {k: v for k, v in filters.items() if v is not None}
    status = api(lambda c: c.memories.forget(all=everything, **filters))
    follow_forget(api, status, wait, as_json)


def follow_forget(api: Api[BrainClient], status: ForgetStatus, wait: bool, as_json: bool) -> None:
    """Wait for a forget task (``wait``) and print what it removed; exit 1 when it failed."""
    body = status.model_dump(mode="json")
    if wait and status.state == "running":
        body |= api(lambda c: c.memories.wait_forget(status.task_id, timeout=3600)).model_dump(mode="json")
    if as_json:
        typer.echo(json.dumps(body, indent=2))
        return
    kinds = ("memories", "history", "dead_letters", "task_records", "feedback")
    counts = ", ".join(f"{body[k]} {k.replace('_', ' ')}" for k in kinds if k in body)
    console.print(f"{body['task_id']}: {body['state']} ({counts})", highlight=False)
    if body["state"] == "failed":
        console.print(f"[bold red]error:[/bold red] {body.get('error')}")
        raise typer.Exit(1)
