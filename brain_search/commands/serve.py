"""CLI: `brain-search serve` runs the HTTP API (uvicorn)."""

from __future__ import annotations

import typer


def serve(
    host: str = typer.Option(None, help="bind address (default: BRAIN_API_HOST)"),
    port: int = typer.Option(None, help="port (default: BRAIN_API_PORT)"),
    workers: int = typer.Option(1, min=1, help="uvicorn worker processes"),
) -> None:
    """Run the HTTP API (recall, memories, nodes, admin, the power-user page at /)."""
    import uvicorn

    from brain_search.config import load_settings

    s = load_settings()
    uvicorn.run(
        "brain_search.api.app:create_app",
        factory=True,
        host=host or s.api_host,
        port=port or s.api_port,
        workers=workers,
        log_level="info",
        access_log=s.api_access_log,
    )
