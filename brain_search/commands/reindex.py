"""CLI: `brain-search reindex --encoder NAME`: move the memories to a new index encoded by NAME
while the current one serves (store/index_move.py, on the machinery of store/moves.py), with
progress; a killed move resumes when run again."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from brain_search.commands.move_progress import move_progress
from brain_search.config import load_settings
from brain_search.encoders.base import ENCODERS, encoder_info
from brain_search.errors import SetupError

console = Console()


def reindex(
    encoder: str = typer.Option(..., "--encoder", help=f"the encoder of the new index: {', '.join(ENCODERS)}"),
    grace_s: float = typer.Option(
        10.0, "--grace-s", min=0.0, help="after the swap, how long writers may land in the old index (at least 4 s)"
    ),
) -> None:
    """Re-embed every memory with ENCODER into the next index version while the current one
    serves, then swap the alias. Writes, edits and deletes during the move are kept; run it again
    after a kill and it resumes. Running APIs and workers follow the new index within 2 s; start
    new ones with BRAIN_EMBEDDING_MODEL=ENCODER."""
    from brain_search.encoders.factory import make_document_embedder
    from brain_search.store.client import make_client
    from brain_search.store.index_move import IndexMove

    try:
        target = encoder_info(encoder)
    except SetupError as exc:
        raise typer.BadParameter(exc.reason, param_hint="--encoder") from None
    settings = load_settings()
    s = settings.model_copy(update={"embedding_model": target.name})
    client = make_client(settings)
    progress = move_progress(console)

    try:
        move = IndexMove(client, settings, target, make_document_embedder(s), grace_s=grace_s, progress=progress)
        report = move.run()
    except SetupError as exc:
        console.print(f"[bold red]error:[/bold red] {exc.reason}")
        raise typer.Exit(1) from None
    table = Table(
        title=f"{report.source} → {report.target} ({report.encoder})" + (", resumed" if report.resumed else "")
    )
    for col in ("pass", "seen", "written", "encoded", "skipped", "deleted", "re-encoded"):
        table.add_column(col)
    for name, c in report.passes.items():
        table.add_row(name, *(str(v) for v in (c.seen, c.written, c.encoded, c.skipped, c.deleted, c.repaired)))
    console.print(table)
    console.print(
        f"the alias {settings.memories_alias} now reads and writes {report.target}; {report.source} is kept "
        f"(delete it once you are sure). Start new processes with BRAIN_EMBEDDING_MODEL={target.name}."
    )
