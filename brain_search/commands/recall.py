"""CLI: `brain-search recall "..."` — over the HTTP API (``--api-url`` / BRAIN_API_URL, default
http://127.0.0.1:8080, and ``--api-key`` / BRAIN_API_KEY: a key means the API and its tenant), or,
only with ``--in-process --tenant T``, against OpenSearch directly for tenant T, which the output
names. The result list takes two lines a memory, cut to the terminal's width."""

from __future__ import annotations

import json
import os

import typer
from brain_search_client.render import render_analysis, render_conversations, render_list, render_tiered
from pydantic import ValidationError
from rich.console import Console

from brain_search.commands import common
from brain_search.commands.common import iso_time, iso_until
from brain_search.models import Focus, RecallRequest, RecallResponse, ZFormula

console = Console()
RECALL_FLAGS = {"z_value": "--z", "user_id": "--user", "agent_id": "--agent"}  # fields whose flag is not their name


def _http_recall(url: str, key: str | None, req: RecallRequest) -> RecallResponse:
    from brain_search.commands.common import tenant_api

    flags = {f: RECALL_FLAGS.get(f, "--" + f.replace("_", "-")) for f in RecallRequest.model_fields if f != "query"}
    return tenant_api(url, key, flags)(lambda c: c.recall(req))


def _local_recall(tenant: str, req: RecallRequest) -> RecallResponse:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from brain_search.api.app import build_state
    from brain_search.config import load_settings

    state = build_state(load_settings())
    try:
        return state.recall(tenant, req)
    finally:
        state.close()  # the recall's record is written before the process ends


def _from_command_line(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"  # typer bundles its own click


def recall(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="natural-language query; quote phrases for exact matches"),
    focus: Focus = typer.Option(Focus.auto, "--focus", help="Z preset"),
    z: float = typer.Option(None, "--z", help="explicit Z target 0–1 (overrides --focus)"),
    *,
    tiered: bool = typer.Option(False, "--tiered", help="group results by Z tier (spec 5.3)"),
    z_formula: ZFormula = typer.Option(None, "--z-formula", help="calibrated (default) or spec"),
    nodes: list[str] = typer.Option(None, "--nodes", help="X-axis filter: node ids or label paths (repeat)"),
    limit: int = typer.Option(10, "--limit", help="maximum results (1–100)"),
    since: str = typer.Option(
        None, "--since", callback=iso_time, help="only memories at or after this time (ISO 8601)"
    ),
    until: str = typer.Option(
        None, "--until", callback=iso_until, help="only memories at or before this time (ISO 8601; a date: to its end)"
    ),
    reference_time: str = typer.Option(
        None, "--reference-time", callback=iso_time, help="what 'last week' in the query is relative to (default now)"
    ),
    time_words: bool = typer.Option(
        False, "--time-words", help="read time words in the query ('last week', 'in May 2023') as since/until"
    ),
    context: int = typer.Option(
        None,
        "--context",
        help="conversation context: list the hits' conversations with N turns (0–5) either side of the best hit; "
        "0: off (default: 2 when the query asks for a conversation, 'that conversation about ...')",
    ),
    include_superseded: bool = typer.Option(
        False, "--include-superseded", help="also memories a later one replaced or that expired (marked)"
    ),
    expand_related: int = typer.Option(
        0, "--expand-related", help="also search the nodes related to --nodes, to this depth (0–3)"
    ),
    strict: bool = typer.Option(
        False, "--strict", help="only memories that clear the relevance floor (none when nothing matched)"
    ),
    min_relevance: float = typer.Option(
        None, "--min-relevance", help="only results whose calibrated relevance (0–1) is at least this"
    ),
    user: str = typer.Option(
        None, "--user", help="only this user's memories (a user's key: its own, always; default: every user)"
    ),
    agent: str = typer.Option(None, "--agent", help="only this agent's memories"),
    include_shared: bool = typer.Option(
        False, "--include-shared", help="with --user: also the organisation's shared memories (those with no user)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the raw JSON response"),
    api_url: str = typer.Option(
        None, "--api-url", envvar="BRAIN_API_URL", help=f"base URL of the API (default {common.DEFAULT_URL})"
    ),
    api_key: str = typer.Option(None, "--api-key", envvar="BRAIN_API_KEY", help="API key of your tenant"),
    in_process: bool = typer.Option(
        False, "--in-process", help="no API: search OpenSearch directly, for the tenant of --tenant"
    ),
    tenant: str = typer.Option(None, "--tenant", envvar="BRAIN_TENANT", help="with --in-process: the tenant"),
) -> None:
    """Recall memories: every result with its lexical and semantic score and its Z position.
    Through the API as the tenant of --api-key; --in-process --tenant T reads OpenSearch directly."""
    if tenant and not in_process and _from_command_line(ctx, "tenant"):
        console.print(
            "[bold red]error:[/bold red] --tenant needs --in-process "
            "(through the API the tenant is the one of --api-key / BRAIN_API_KEY)"
        )
        raise typer.Exit(2)
    if in_process and not tenant:
        console.print("[bold red]error:[/bold red] --in-process needs --tenant (the tenant to search)")
        raise typer.Exit(2)
    if not in_process and not api_key:
        console.print(
            "[bold red]error:[/bold red] no key: pass --api-key / BRAIN_API_KEY "
            "(or --in-process --tenant T to search OpenSearch directly)"
        )
        raise typer.Exit(2)
    try:
        req = RecallRequest(
            query=query,
            focus=focus,
            z_value=z,
            nodes=nodes or None,
            limit=limit,
            tiered=tiered,
            z_formula=z_formula,
            since=since,
            until=until,
            reference_time=reference_time,
            time_words=time_words,
            context=context,
            include_superseded=include_superseded,
            expand_related=expand_related,
            strict=strict,
            min_relevance=min_relevance,
            user_id=user,
            agent_id=agent,
            include_shared=include_shared,
        )
    except ValidationError as exc:
        for err in exc.errors():  # in the CLI's words: the flag, not the request field
            field = str(err["loc"][0]) if err["loc"] else "query"
            flag = "QUERY" if field == "query" else RECALL_FLAGS.get(field, "--" + field.replace("_", "-"))
            console.print(f"[bold red]error:[/bold red] {flag}: {err['msg']}", highlight=False)
        raise typer.Exit(2) from None
    from brain_search.errors import BrainSearchError

    try:
        resp = _local_recall(tenant, req) if in_process else _http_recall(api_url or common.DEFAULT_URL, api_key, req)
    except BrainSearchError as exc:
        console.print(f"[bold red]error:[/bold red] {exc}")
        raise typer.Exit(1) from None
    where = f"in-process · tenant {tenant}" if in_process else None
    if as_json:
        if where:
            Console(stderr=True).print(f"[dim]{where}[/dim]", highlight=False)
        print(json.dumps(resp.model_dump(mode="json"), indent=2))
        return
    if where:
        console.print(f"[dim]{where}[/dim]", highlight=False)
    console.print(f"[dim]{render_analysis(resp)}[/dim]")
    if resp.recall_id:
        # one line at 80 columns: `brain-search feedback rate ID --rating 1-5` rates it
        console.print(f"[dim]recall {resp.recall_id} (brain-search feedback rate it)[/dim]", highlight=False)
    columns = max(40, console.width)
    if tiered:
        print(render_tiered(resp, columns=columns), end="")
    elif resp.results:
        print(render_list(resp, columns), end="")
    else:
        console.print("[dim]no memory matched[/dim]")
    if resp.conversations is not None:
        print("\n" + render_conversations(resp, columns), end="")
