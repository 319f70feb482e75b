"""CLI: `brain-search demo` — the main job (see brain_search/local/demo.py)."""

from __future__ import annotations

import typer
from rich.console import Console

from brain_search.config import load_settings
from brain_search.errors import SetupError

console = Console()


def demo(
    worker: bool = typer.Option(True, help="run ingestion on a Redis-backed Celery worker (else in-process)"),
    secured: bool = typer.Option(
        False, help="the engine behind the gateway (TLS, roles): the API as `api`, the worker as `worker`"
    ),
) -> None:
    """Start the local stack and API, load the sample memories, print the spec's tiered views."""
    from brain_search.local import demo as d

    settings = load_settings()

    def log(msg: str) -> None:
        console.print(f"[dim]·[/dim] {msg}")

    try:
        info = d.bring_up(settings, with_worker=worker, log=log, secured=secured)
        views = d.spec_views(info.api_url, info.api_key)
    except SetupError as exc:
        console.print(f"[bold red]error:[/bold red] {exc.reason}")
        if exc.log_tail:
            console.print(exc.log_tail, markup=False, highlight=False)
        raise typer.Exit(1) from None
    print()
    for view in views:
        print(view)
    console.print(f"[bold green]brain-search is running[/bold green] at [bold]{info.api_url}[/bold]")
    console.print(
        f"  power-user page: {info.api_url}/   ·   API docs: {info.api_url}/docs   ·   MCP: {info.api_url}/mcp/"
    )
    console.print(f"  API key of tenant '{d.DEMO_TENANT}': {info.api_key}")
    console.print("  stop everything with: make down")
