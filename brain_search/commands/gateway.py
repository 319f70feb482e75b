"""CLI: the engine gateway (`gateway start|stop|status|render|env`) and the index set-up
(`indices install|verify`)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from brain_search.commands.stack import _fail, _log, console
from brain_search.config import load_settings
from brain_search.errors import SetupError
from brain_search.gateway.certs import ensure_certificates
from brain_search.gateway.nginx import render_conf
from brain_search.gateway.rules import Role
from brain_search.local.gateway import LocalGateway
from brain_search.store.client import make_client
from brain_search.store.indices import install_all, verify_all

gateway_app = typer.Typer(help="The engine gateway: TLS and per-role users in front of the local OpenSearch.")
indices_app = typer.Typer(help="The deployment's indices: install (admin role) or verify (any role).")


@gateway_app.command("start")
def start() -> None:
    """Start the gateway in front of the local node (certificates and users made once, kept)."""
    gw = LocalGateway(load_settings(), log=_log)
    try:
        url = gw.start()
    except SetupError as exc:
        _fail(exc)
        return
    console.print(f"[green]gateway up[/green] at {url} (CA {gw.ca_file}; users: {', '.join(r.value for r in Role)})")
    console.print(f"credentials: {gw.credentials_file} (0600); `brain-search gateway env api` prints a role's settings")


@gateway_app.command("stop")
def stop() -> None:
    LocalGateway(load_settings(), log=_log).stop()
    console.print("stopped")


@gateway_app.command("status")
def status() -> None:
    gw = LocalGateway(load_settings(), log=_log)
    console.print(f"gateway {gw.url} {'up' if gw.running() else 'down'}")
    if not gw.running():
        raise typer.Exit(3)


@gateway_app.command("env")
def env(role: Role = typer.Argument(..., help="admin, api or worker")) -> None:
    """The BRAIN_OPENSEARCH_* settings of one role, as shell lines (`eval $(brain-search gateway env api)`)."""
    for k, v in LocalGateway(load_settings(), log=_log).env_for(role).items():
        sys.stdout.write(f"export {k}='{v}'\n")


@gateway_app.command("run")
def run() -> None:
    """A deployment's gateway (compose, the chart): render nginx.conf and the users from
    BRAIN_GATEWAY_* and run nginx in the foreground (a renewed certificate is reloaded)."""
    from brain_search.gateway.service import GatewaySettings
    from brain_search.gateway.service import run as run_gateway

    try:
        code = run_gateway(GatewaySettings())
    except SetupError as exc:
        _fail(exc)
        return
    raise typer.Exit(code)


@gateway_app.command("render")
def render() -> None:
    """Print the nginx.conf `gateway run` would use with the current BRAIN_GATEWAY_* settings."""
    from brain_search.gateway.service import GatewaySettings, layout

    try:
        sys.stdout.write(render_conf(layout(GatewaySettings())))
    except SetupError as exc:
        _fail(exc)


@gateway_app.command("certs")
def certs(
    directory: Path = typer.Option(..., "--dir", help="where the CA and the server certificate go (kept once made)"),
    public_dir: Path = typer.Option(None, help="also copy the CA certificate (only) here, for clients"),
    host: list[str] = typer.Option(["localhost", "127.0.0.1"], help="the server certificate's names"),
) -> None:
    """Make a CA and the gateway's server certificate (a workstation stack; a cluster uses its own)."""
    ca, cert, key = ensure_certificates(directory, tuple(host))
    (directory / "tls.crt").write_bytes(cert.read_bytes())
    tls_key = directory / "tls.key"
    tls_key.write_bytes(key.read_bytes())
    tls_key.chmod(0o600)
    if public_dir:
        public_dir.mkdir(parents=True, exist_ok=True)
        (public_dir / "ca.pem").write_bytes(ca.read_bytes())
    console.print(f"certificates in {directory} (CA {ca})")


@indices_app.command("install")
def indices_install() -> None:
    """Create or migrate every index of the prefix (idempotent; needs the admin role)."""
    settings = load_settings()
    index = install_all(make_client(settings), settings)
    console.print(f"indices of {settings.index_prefix!r} installed (memories: {index})")


@indices_app.command("verify")
def indices_verify() -> None:
    """Check that every index of the prefix exists (what the api and worker roles do at start)."""
    settings = load_settings()
    try:
        index = verify_all(make_client(settings), settings)
    except SetupError as exc:
        _fail(exc)
        return
    console.print(f"indices of {settings.index_prefix!r} present (memories: {index})")
