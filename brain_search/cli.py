"""The `brain-search` command. Each group of commands lives in `brain_search/commands/`."""

from __future__ import annotations

import typer

from brain_search.commands import bench, demo, ingest, mcp, nodes, recall, serve, stack, worker
from brain_search.commands import eval as eval_command

app = typer.Typer(help="brain-search: three-dimensional memory retrieval on OpenSearch.", no_args_is_help=True)
app.command()(stack.up)
app.command()(stack.down)
app.command()(serve.serve)
app.command()(recall.recall)
app.command()(mcp.mcp)
app.command()(demo.demo)
app.command()(worker.worker)
app.command()(ingest.ingest)
app.command(name="eval")(eval_command.eval_cmd)
app.add_typer(stack.opensearch_app, name="opensearch")
app.add_typer(stack.redis_app, name="redis")
nodes.register(app)
app.add_typer(bench.bench_app, name="bench")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
