"""CLI: `brain-search tenant-index TENANT`: give a tenant its own index and move its memories
there while both serve (store/tenant_move.py), with progress; a killed move resumes when run
again. CLI only, like `reindex`: it creates an index and an alias, which needs the engine's admin
role, which the API never holds."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from brain_search.commands.move_progress import move_progress
from brain_search.config import load_settings
from brain_search.errors import NotFound, SetupError

console = Console()


def tenant_index(
    tenant: str = typer.Argument(..., help="the tenant that gets its own index"),
    grace_s: float = typer.Option(
        10.0, "--grace-s", min=0.0, help="after the swap, how long writers may land in the shared index (at least 4 s)"
    ),
    encoder: str = typer.Option(
        None,
        "--encoder",
        help="the encoder of the tenant's index (default: the shared index's); its memories re-encoded",
    ),
) -> None:
    """Move TENANT's memories from the shared index to an index of its own while both serve: copy,
    catch up, point the tenant's placement at its index, wait the grace, copy and clean up what
    raced the move, then delete the tenant's documents from the shared index. Writes, edits and
    deletes during the move are kept; run it again after a kill and it resumes. One move at a time:
    a second run while this one runs is refused, naming it. Running APIs and workers follow within
    2 s."""
    from brain_search.store.client import make_client
    from brain_search.store.tenant_move import TenantMove
    from brain_search.tenancy.auth import KeyStore

    settings = load_settings()
    client = make_client(settings)
    try:
        KeyStore(client, settings).get_tenant(tenant)
    except NotFound:
        console.print(f"[bold red]error:[/bold red] no tenant {tenant!r}")
        raise typer.Exit(1) from None
    progress = move_progress(console)

    try:
        move = TenantMove(client, settings, tenant, grace_s=grace_s, progress=progress, encoder=encoder)
        report = move.run()
    except SetupError as exc:
        console.print(f"[bold red]error:[/bold red] {exc.reason}")
        raise typer.Exit(1) from None
    if not report.passes:
        console.print(f"already has its own index: tenant {tenant}, {report.target} (alias {move.alias})")
        return
    table = Table(title=f"{tenant}: {report.source} → {report.target}" + (", resumed" if report.resumed else ""))
    for col in ("pass", "seen", "written", "skipped", "deleted"):
        table.add_column(col)
    for name, c in report.passes.items():
        table.add_row(name, *(str(v) for v in (c.seen, c.written, c.skipped, c.deleted)))
    console.print(table)
    console.print(
        f"tenant {tenant} now reads and writes {move.alias} ({report.target}); its documents are gone from "
        f"{report.source}."
    )
