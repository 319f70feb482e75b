"""`brain-search worker`: run a Celery worker that embeds and indexes memories.

The command lives with the workers and reaches the `brain-search` CLI through the entry-point group
``brain_search.commands`` (pyproject.toml), so the package never imports ``workers``."""

from __future__ import annotations

import socket

import typer


def worker(
    concurrency: int = typer.Option(
        1, min=1, help="worker processes (each embeds on one session per CPU, at most 4: BRAIN_EMBEDDING_SESSIONS)"
    ),
    pool: str = typer.Option("prefork", help="prefork | solo | threads"),
    loglevel: str = typer.Option("info", help="debug | info | warning | error"),
    hostname: str = typer.Option(None, help="worker name (default: ingest-<pid>@<host>)"),
) -> None:
    """Run an ingest worker on Redis (BRAIN_REDIS_URL): tasks from `POST /v1/memories`."""
    import logging
    import os

    from rich.console import Console

    from brain_search.config import load_settings
    from brain_search.errors import SetupError
    from brain_search.ingest.broker import lane_queues
    from workers.app import make_celery

    settings = load_settings()
    try:
        app = make_celery(settings)
    except SetupError as exc:
        Console(stderr=True).print(f"[bold red]error:[/bold red] {exc}")
        raise typer.Exit(1) from None
    logging.getLogger("opensearch").setLevel(logging.WARNING)  # one line per request otherwise
    if pool != "prefork":
        from workers.app import send_job

        # the model loads before the first task, in the process that runs tasks
        app.runtime().start_reconciler(lambda job: send_job(app, job))
    name = hostname or f"ingest-{os.getpid()}@{socket.gethostname()}"
    app.worker_main(
        [
            "worker",
            f"--concurrency={concurrency}",
            f"--pool={pool}",
            f"--loglevel={loglevel}",
            f"--hostname={name}",
            f"--queues={','.join(lane_queues(settings))}",  # in this order: the fast lane first
            "--without-gossip",
            "--without-mingle",
        ]
    )
