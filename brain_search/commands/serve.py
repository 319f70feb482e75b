"""CLI: `brain-search serve` runs the HTTP API (uvicorn)."""

from __future__ import annotations

import typer


def serve(
    host: str = typer.Option(None, help="bind address (default: BRAIN_API_HOST)"),
    port: int = typer.Option(None, help="port (default: BRAIN_API_PORT)"),
    workers: int = typer.Option(1, min=1, help="uvicorn worker processes"),
) -> None:
    """Run the HTTP API (recall, memories, nodes, admin, the power-user page at /). With
    BRAIN_ADMIN_PORT the same process also listens there, and only there answers /v1/admin/*."""
    import uvicorn

    from brain_search.config import load_settings

    s = load_settings()
    host, port = host or s.api_host, port or s.api_port
    common: dict[str, object] = {
        "factory": True,
        "log_level": "info",
        "access_log": s.api_access_log,
        "timeout_keep_alive": s.api_keepalive_s,
    }
    if s.admin_port is None:
        uvicorn.run("brain_search.api.app:create_app", host=host, port=port, workers=workers, **common)  # type: ignore[arg-type]
        return
    if workers != 1:
        raise typer.BadParameter("with BRAIN_ADMIN_PORT the API runs one worker process (scale with replicas)")
    import socket

    sockets = []
    for p in (port, s.admin_port):
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, p))
        sockets.append(sock)
    config = uvicorn.Config("brain_search.api.app:create_app", host=host, port=port, **common)  # type: ignore[arg-type]
    uvicorn.Server(config).run(sockets=sockets)
