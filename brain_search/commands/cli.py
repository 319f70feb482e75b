"""The `brain-search` command. Each group of commands lives in `brain_search/commands/`; commands
of other packages (the worker, the lab) join through the entry-point group ``brain_search.commands``."""

from __future__ import annotations

from importlib.metadata import entry_points

import typer

from brain_search.commands import (
    demo,
    feedback,
    gateway,
    ingest,
    mcp,
    memories,
    nodes,
    recall,
    reindex,
    remember,
    serve,
    stack,
    tenant_index,
    users,
)
from brain_search.commands.common import old_spelling

app = typer.Typer(
    help="brain-search: three-dimensional memory retrieval on OpenSearch.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: no <bool> after a flag, no word cut at the edge of a column
    context_settings={"token_normalize_func": old_spelling},  # --url / --key: read as --api-url / --api-key
)
app.command()(stack.up)
app.command()(stack.down)
app.command()(serve.serve)
app.command()(remember.remember)
app.command()(recall.recall)
app.command()(mcp.mcp)
app.command()(demo.demo)
app.command()(ingest.ingest)
app.command("import")(ingest.import_memories)
app.command("export")(memories.export)
app.command("forget")(memories.forget)
app.command("reindex")(reindex.reindex)
app.command("tenant-index")(tenant_index.tenant_index)
app.add_typer(stack.opensearch_app, name="opensearch")
app.add_typer(stack.redis_app, name="redis")
app.add_typer(gateway.gateway_app, name="gateway")
app.add_typer(gateway.indices_app, name="indices")
nodes.register(app)
memories.register(app)
feedback.register(app)
users.register(app)


def _plugins() -> None:
    """Commands other installed packages declare (``[project.entry-points."brain_search.commands"]``)."""
    for ep in entry_points(group="brain_search.commands"):
        command = ep.load()
        if isinstance(command, typer.Typer):
            app.add_typer(command, name=ep.name)
        else:
            app.command(name=ep.name)(command)


def main() -> None:
    _plugins()
    app()


if __name__ == "__main__":
    main()
