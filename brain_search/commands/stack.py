"""CLI: the local stack (`up`, `down`, `opensearch ...`, `redis ...`)."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from brain_search.config import load_settings
from brain_search.errors import SetupError
from brain_search.local.node import LocalCluster
from brain_search.local.redis_server import LocalRedis
from brain_search.local.stack import start_stack

console = Console()
opensearch_app = typer.Typer(help="The local OpenSearch (with k-NN), fetched from Maven Central.")
redis_app = typer.Typer(help="The local Redis (broker and result backend).")


def _log(msg: str) -> None:
    console.print(f"[dim]·[/dim] {msg}")


def _fail(exc: SetupError) -> None:
    console.print(f"[bold red]error:[/bold red] {exc.reason}")
    if exc.log_tail:
        console.print("[dim]--- last lines of the log ---[/dim]")
        console.print(exc.log_tail, markup=False, highlight=False)
    raise typer.Exit(1)


def up(
    redis: bool = typer.Option(True, help="also start a local Redis"),
    nodes: int = typer.Option(1, min=1, max=9, help="OpenSearch nodes on loopback ports"),
    secured: bool = typer.Option(
        False, help="also start the engine gateway (TLS, users admin/api/worker) in front of the node"
    ),
) -> None:
    """Start the local stack (OpenSearch + k-NN, Redis), install the templates, print health."""
    from brain_search.local.gateway import LocalGateway

    settings = load_settings()
    try:
        info = start_stack(settings, nodes=nodes, with_redis=redis, log=_log)
        gateway = LocalGateway(settings, log=_log) if secured else None
        if gateway:
            gateway.start()
    except SetupError as exc:
        _fail(exc)
        return
    table = Table(title="brain-search local stack", show_header=False)
    table.add_row("OpenSearch", f"{info.opensearch_url} (v{info.opensearch_version})")
    h = info.cluster_health
    table.add_row("cluster", f"{h['cluster_name']}: {h['status']}, {h['number_of_nodes']} node(s)")
    table.add_row("plugins", ", ".join(info.plugins))
    table.add_row("memories index", f"{info.memories_index} (alias {settings.memories_alias})")
    table.add_row("Redis", info.redis_url or "not started")
    if gateway:
        table.add_row("engine gateway", f"{gateway.url} (CA {gateway.ca_file})")
        table.add_row("roles", "admin, api, worker: `eval $(brain-search gateway env api)` before `serve`")
    console.print(table)


def down(redis: bool = typer.Option(True, help="also stop the local Redis")) -> None:
    """Stop the local stack; leaves no process behind."""
    from brain_search.local.demo import api_process, worker_process
    from brain_search.local.gateway import LocalGateway

    settings = load_settings()
    api_process(settings).stop()
    worker_process(settings).stop()
    LocalGateway(settings, log=_log).stop()
    LocalCluster(settings, log=_log).stop()
    if redis:
        LocalRedis(settings, log=_log).stop()
    console.print("stopped")


@opensearch_app.command("start")
def os_start(
    nodes: int = typer.Option(1, min=1, max=9, help="nodes in the cluster"),
    port: int = typer.Option(None, help="HTTP port of the first node (next nodes: +1, +2 ...)"),
    transport_port: int = typer.Option(None, help="transport port of the first node"),
) -> None:
    """Fetch (first time), configure and start OpenSearch in the background; wait for health."""
    settings = load_settings()
    cluster = LocalCluster(settings, nodes=nodes, http_port=port, transport_port=transport_port, log=_log)
    try:
        health = cluster.start()
    except SetupError as exc:
        _fail(exc)
        return
    console.print(
        f"[green]OpenSearch up[/green] at {cluster.url}: {health['status']}, {health['number_of_nodes']} node(s)"
    )


@opensearch_app.command("stop")
def os_stop(
    nodes: int = typer.Option(1, min=1, max=9),
    port: int = typer.Option(None),
    transport_port: int = typer.Option(None),
    wipe: bool = typer.Option(False, help="also delete the nodes' data"),
) -> None:
    """Stop the node(s) started by `opensearch start` with the same options."""
    cluster = LocalCluster(load_settings(), nodes=nodes, http_port=port, transport_port=transport_port, log=_log)
    cluster.wipe() if wipe else cluster.stop()
    console.print("stopped")


@opensearch_app.command("status")
def os_status(
    nodes: int = typer.Option(1, min=1, max=9),
    port: int = typer.Option(None),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Per-node process and HTTP status, plus cluster health."""
    cluster = LocalCluster(load_settings(), nodes=nodes, http_port=port, log=_log)
    rows = cluster.status()
    health = cluster.health()
    if as_json:
        print(json.dumps({"nodes": [r.__dict__ for r in rows], "health": health}))
        return
    for r in rows:
        state = "[green]up[/green]" if r.answering else ("[yellow]starting[/yellow]" if r.alive else "[red]down[/red]")
        console.print(f"{r.name} :{r.http_port} pid={r.pid} {state}")
    console.print(f"health: {health['status'] if health else 'unreachable'}")
    if not any(r.answering for r in rows):
        raise typer.Exit(3)


@redis_app.command("start")
def redis_start(port: int = typer.Option(None)) -> None:
    """Install (Debian package, when missing) and start Redis on loopback."""
    try:
        url = LocalRedis(load_settings(), port=port, log=_log).start()
    except SetupError as exc:
        _fail(exc)
        return
    console.print(f"[green]Redis up[/green] at {url}")


@redis_app.command("stop")
def redis_stop(port: int = typer.Option(None)) -> None:
    LocalRedis(load_settings(), port=port, log=_log).stop()
    console.print("stopped")


@redis_app.command("status")
def redis_status(port: int = typer.Option(None)) -> None:
    r = LocalRedis(load_settings(), port=port, log=_log)
    console.print(f"redis :{r.port} {'up' if r.running() else 'down'}")
    if not r.running():
        raise typer.Exit(3)
