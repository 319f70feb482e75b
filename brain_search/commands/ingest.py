"""CLI: `brain-search ingest FILE|-` (JSON Lines, or `--format locomo`), through the API or
in-process, with a progress bar and a summary."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from brain_search.commands.common import in_cli_words

if TYPE_CHECKING:
    from brain_search.ingest.sources import SourceRecord

console = Console(stderr=True)


class Format(StrEnum):
    jsonl = "jsonl"
    locomo = "locomo"


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())


def ingest(
    file: str = typer.Argument(..., help="JSON Lines file (one memory per line), '-' for stdin, or locomo10.json"),
    fmt: Format = typer.Option(Format.jsonl, "--format", help="jsonl | locomo"),
    api_url: str = typer.Option(None, envvar="BRAIN_API_URL", help="send to this API; without it: in-process"),
    api_key: str = typer.Option(None, envvar="BRAIN_API_KEY", help="the tenant's API key (API mode)"),
    *,
    admin_key: str = typer.Option(
        None, envvar="BRAIN_ADMIN_KEY", help="API mode, LoCoMo: creates a tenant and key per conversation"
    ),
    tenant: str = typer.Option(None, help="in-process JSON Lines: the tenant to write to"),
    conversation: list[str] = typer.Option(None, help="LoCoMo: only these conversations (e.g. conv-26); repeatable"),
    batch_size: int = typer.Option(256, min=1, help="memories per request / task"),
    max_in_flight: int = typer.Option(4, min=1, help="tasks queued at once"),
    chunk: bool = typer.Option(False, help="split content longer than the chunk size into overlapping memories"),
    refresh: bool = typer.Option(False, help="each task completes once its memories are searchable"),
    create_nodes: bool = typer.Option(None, help="create unknown nodes named by label (default: on for LoCoMo)"),
    user: str = typer.Option(None, "--user", help="the user of each memory that names none (a user's key: its own)"),
    agent: str = typer.Option(None, "--agent", help="the agent of each memory that names none"),
) -> None:
    """Ingest memories; prints throughput and failures. Exit code 1 when any memory failed."""
    from brain_search.commands.ingest_runner import ApiSubmitter, InProcessSubmitter, Submitter, run_ingest
    from brain_search.config import load_settings
    from brain_search.errors import SetupError
    from brain_search.ingest.models import IngestOptions
    from brain_search.ingest.sources import read_jsonl, read_jsonl_file, read_locomo

    options = IngestOptions(
        chunk=chunk, refresh=refresh, create_nodes=create_nodes if create_nodes is not None else fmt is Format.locomo
    )
    total: int | None = None
    if fmt is Format.locomo:
        if file == "-":
            raise typer.BadParameter("LoCoMo is read from its file (locomo10.json)")
        path = Path(file)
        total = sum(1 for r in read_locomo(path, set(conversation or [])))
        records = read_locomo(path, set(conversation or []))
    elif file == "-":
        records = read_jsonl(sys.stdin)
    else:
        path = Path(file)
        total = _count_lines(path)
        records = read_jsonl_file(path)
    if user or agent:
        records = with_owner(records, user, agent)

    try:
        submitter: Submitter
        if api_url:
            submitter = ApiSubmitter(api_url, api_key, admin_key)
            where = api_url
        else:
            console.print("[dim]· in-process: loading the model and connecting to OpenSearch[/dim]")
            submitter = InProcessSubmitter(load_settings(), tenant)
            where = "in-process"
        columns = (
            TextColumn(f"ingest ({where})"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console) as progress:
            bar = progress.add_task("ingest", total=total)
            summary = run_ingest(
                records,
                submitter,
                options,
                batch_size=batch_size,
                max_in_flight=max_in_flight,
                on_progress=lambda n: progress.advance(bar, n),
            )
        submitter.close()
    except SetupError as exc:
        console.print(f"[bold red]error:[/bold red] {exc}")
        raise typer.Exit(1) from None

    table = Table(title="ingest summary", show_header=False)
    table.add_row("records read", str(summary.read))
    table.add_row("indexed", str(summary.indexed))
    table.add_row("failed (dead-lettered)", str(summary.failed))
    table.add_row("rejected (not queued)", str(summary.rejected))
    table.add_row("elapsed", f"{summary.elapsed_s:.1f} s")
    table.add_row("throughput", f"{summary.rate:.1f} memories/s")
    console.print(table)
    if summary.failures:
        failures = Table(title=f"failures (first {len(summary.failures)})")
        failures.add_column("where")
        failures.add_column("reason")
        for where_, reason in summary.failures:
            failures.add_row(where_, in_cli_words(reason)[:200])
        console.print(failures)
    if summary.failed or summary.rejected:
        raise typer.Exit(1)


def import_memories(
    file: str = typer.Argument(..., help="JSON Lines written by `brain-search export` ('-' for stdin)"),
    api_url: str = typer.Option(None, envvar="BRAIN_API_URL", help="send to this API; without it: in-process"),
    api_key: str = typer.Option(None, envvar="BRAIN_API_KEY", help="the tenant's API key (API mode)"),
    tenant: str = typer.Option(None, help="in-process: the tenant to write to"),
    *,
    refresh: bool = typer.Option(True, help="each task completes once its memories are searchable"),
    user: str = typer.Option(None, "--user", help="the user of each memory that names none"),
) -> None:
    """Read memories written by `brain-search export` back (same ids, fields, users and nodes,
    created as needed): `ingest` for JSON Lines with `--create-nodes`."""
    ingest(
        file=file,
        fmt=Format.jsonl,
        api_url=api_url,
        api_key=api_key,
        admin_key=None,  # type: ignore[arg-type]  # typer's defaults are None too
        tenant=tenant,
        conversation=[],
        batch_size=256,
        max_in_flight=4,
        chunk=False,
        refresh=refresh,
        create_nodes=True,
        user=user,
        agent=None,  # type: ignore[arg-type]
    )


def with_owner(records: Iterable[SourceRecord], user: str | None, agent: str | None) -> Iterator[SourceRecord]:
    """Each record's memory with ``user`` / ``agent`` where it names none (its own wins)."""
    for rec in records:
        if rec.memory is None:
            yield rec
            continue
        update = {"user_id": rec.memory.user_id or user, "agent_id": rec.memory.agent_id or agent}
        yield replace(rec, memory=rec.memory.model_copy(update=update))
