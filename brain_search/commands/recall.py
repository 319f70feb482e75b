"""CLI: `brain-search recall "..."` — over the HTTP API (BRAIN_API_URL + BRAIN_API_KEY) or, with
no API URL, in-process against OpenSearch for one tenant."""

from __future__ import annotations

import json
import os

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from brain_search.models import Focus, RecallRequest, RecallResponse, ZFormula
from brain_search.render import render_analysis, render_tiered, short_date, snippet

console = Console()


def _http_recall(url: str, key: str | None, req: RecallRequest) -> RecallResponse:
    from brain_search.client import ApiError, ApiUnavailable, BrainClient

    try:
        with BrainClient(url, api_key=key) as api:
            return api.recall(req)
    except ApiError as exc:
        console.print(f"[bold red]error {exc.status}:[/bold red] {exc.detail}")
        raise typer.Exit(1) from None
    except ApiUnavailable as exc:
        console.print(f"[bold red]error:[/bold red] {exc}")
        raise typer.Exit(1) from None


def _local_recall(tenant: str, req: RecallRequest) -> RecallResponse:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from brain_search.api.app import build_state
    from brain_search.config import load_settings

    state = build_state(load_settings())
    resp: RecallResponse = state.retriever.recall(tenant, req)
    return resp


def recall(
    query: str = typer.Argument(..., help="natural-language query; quote phrases for exact matches"),
    focus: Focus = typer.Option(Focus.auto, "--focus", help="Z preset"),
    z: float = typer.Option(None, "--z", help="explicit Z target 0–1 (overrides --focus)"),
    tiered: bool = typer.Option(False, "--tiered", help="group results by Z tier (spec 5.3)"),
    z_formula: ZFormula = typer.Option(None, "--z-formula", help="calibrated (default) or spec"),
    nodes: list[str] = typer.Option(None, "--nodes", help="X-axis filter: node ids or label paths (repeat)"),
    limit: int = typer.Option(10, "--limit", help="maximum results (1–100)"),
    as_json: bool = typer.Option(False, "--json", help="print the raw JSON response"),
    api_url: str = typer.Option(None, envvar="BRAIN_API_URL", help="API base URL; unset = in-process"),
    api_key: str = typer.Option(None, envvar="BRAIN_API_KEY", help="API key (with --api-url)"),
    tenant: str = typer.Option("demo", envvar="BRAIN_TENANT", help="tenant for in-process recall"),
) -> None:
    """Recall memories: every result with its lexical and semantic score and its Z position."""
    try:
        req = RecallRequest(
            query=query, focus=focus, z_value=z, nodes=nodes or None, limit=limit, tiered=tiered, z_formula=z_formula
        )
    except ValidationError as exc:
        for err in exc.errors():
            console.print(f"[bold red]invalid {'.'.join(map(str, err['loc']))}:[/bold red] {err['msg']}")
        raise typer.Exit(2) from None
    from brain_search.errors import BrainSearchError

    try:
        resp = _http_recall(api_url, api_key, req) if api_url else _local_recall(tenant, req)
    except BrainSearchError as exc:
        console.print(f"[bold red]error:[/bold red] {exc}")
        raise typer.Exit(1) from None
    if as_json:
        print(json.dumps(resp.model_dump(mode="json"), indent=2))
        return
    console.print(f"[dim]{render_analysis(resp)}[/dim]")
    if tiered:
        print(render_tiered(resp))
        return
    table = Table(show_lines=False)
    for col in ("#", "memory", "node", "date", "lex", "sem", "Z", "kind", "rel"):
        table.add_column(col)
    for i, r in enumerate(resp.results, 1):
        s = r.scores
        table.add_row(
            str(i),
            snippet(r.content, 60),
            r.node.label or "",
            short_date(r.metadata.timestamp),
            f"{s.lexical:.2f}",
            f"{s.semantic:.2f}",
            f"{s.z_position:.2f}",
            r.match_kind.value,
            f"{s.relevance:.3f}",
        )
    console.print(table)
