"""The engine gateway as a deployment runs it (compose's ``opensearch-gateway``, the chart's
gateway Deployment): ``brain-search gateway run`` renders the same nginx.conf as the local stack
(``gateway.render_conf``: the same roles and rules), hashes the role passwords it was given into
an htpasswd file, and runs nginx in the foreground (reloading it when the mounted certificate is renewed).

Settings come from ``BRAIN_GATEWAY_*`` variables (and ``BRAIN_INDEX_PREFIX``); certificates are
mounted (cert-manager, or the compose stack's ``gateway-certs`` one-shot)."""

from __future__ import annotations

import re
from base64 import b64encode
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from brain_search.errors import SetupError
from brain_search.gateway.nginx import GatewayLayout, nginx_executable, nginx_run_as, render_conf, write_users
from brain_search.gateway.rules import Role


class GatewaySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BRAIN_GATEWAY_", env_file=None, extra="ignore", frozen=True)

    listen: str = "9200"
    # the nodes: "host:port" or URLs, comma-separated; https:// URLs turn on verified upstream TLS
    upstream: str = "opensearch:9200"
    upstream_ca: Path | None = None  # CA of a TLS upstream (default: the system's trust store)
    # the gateway's own user on an upstream that has its own security plugin (none: plain node on
    # a private network, reachable only by the gateway)
    upstream_user: str | None = None
    upstream_password: SecretStr | None = None
    certificate: Path = Path("/etc/brain-gateway/tls/tls.crt")
    certificate_key: Path = Path("/etc/brain-gateway/tls/tls.key")
    index_prefix: str = Field(
        "brain", validation_alias=AliasChoices("BRAIN_INDEX_PREFIX", "BRAIN_GATEWAY_INDEX_PREFIX")
    )
    # each role's password (a role without one has no user here: e.g. no admin after set-up)
    admin_password: SecretStr | None = None
    api_password: SecretStr | None = None
    worker_password: SecretStr | None = None
    run_dir: Path = Path("/tmp/brain-gateway")
    cert_check_interval_s: float = Field(30.0, gt=0)  # a renewed certificate is reloaded this soon
    worker_processes: int = Field(2, ge=1, le=64)


def _upstream(settings: GatewaySettings) -> tuple[tuple[str, ...], bool]:
    servers, schemes = [], set()
    for raw in (u.strip() for u in settings.upstream.split(",")):
        if not raw:
            continue
        m = re.fullmatch(r"(?:(https?)://)?([A-Za-z0-9.\-\[\]:]+?:[0-9]+)/?", raw)
        if not m:
            raise SetupError(f"BRAIN_GATEWAY_UPSTREAM: {raw!r} is not host:port or a http(s) URL")
        schemes.add(m.group(1) or "http")
        servers.append(m.group(2))
    if not servers or len(schemes) != 1:
        raise SetupError("BRAIN_GATEWAY_UPSTREAM: name one or more nodes, all http or all https")
    return tuple(servers), schemes == {"https"}


def passwords(settings: GatewaySettings) -> dict[Role, SecretStr]:
    given = {
        Role.admin: settings.admin_password,
        Role.api: settings.api_password,
        Role.worker: settings.worker_password,
    }
    out = {r: p for r, p in given.items() if p is not None and p.get_secret_value()}
    for role, p in out.items():
        if len(p.get_secret_value()) < 16:
            raise SetupError(f"BRAIN_GATEWAY_{role.value.upper()}_PASSWORD: at least 16 characters")
    if Role.api not in out or Role.worker not in out:
        raise SetupError("BRAIN_GATEWAY_API_PASSWORD and BRAIN_GATEWAY_WORKER_PASSWORD are required")
    return out


def layout(settings: GatewaySettings) -> GatewayLayout:
    servers, tls = _upstream(settings)
    auth = None
    if settings.upstream_user:
        if settings.upstream_password is None:
            raise SetupError("BRAIN_GATEWAY_UPSTREAM_PASSWORD is required with BRAIN_GATEWAY_UPSTREAM_USER")
        token = f"{settings.upstream_user}:{settings.upstream_password.get_secret_value()}".encode()
        auth = SecretStr(f"Basic {b64encode(token).decode()}")
    return GatewayLayout(
        listen=settings.listen,
        upstream=servers,
        certificate=str(settings.certificate),
        certificate_key=str(settings.certificate_key),
        htpasswd=str(settings.run_dir / "htpasswd"),
        prefix_pattern=re.escape(settings.index_prefix),
        pid_file=str(settings.run_dir / "nginx.pid"),
        error_log="/dev/stderr",
        temp_dir=str(settings.run_dir / "tmp"),
        run_as=nginx_run_as(),
        worker_processes=settings.worker_processes,
        upstream_tls=tls,
        upstream_ca=str(settings.upstream_ca) if settings.upstream_ca else None,
        upstream_authorization=auth,
        denied_log="/dev/stdout",
    )


def prepare(settings: GatewaySettings) -> Path:
    """Write htpasswd and nginx.conf under ``run_dir``; returns the config's path."""
    users = passwords(settings)
    for path in (settings.certificate, settings.certificate_key):
        if not path.is_file():
            raise SetupError(f"the gateway's certificate file {path} is missing (mount the TLS Secret)")
    lay = layout(settings)
    d = settings.run_dir
    d.mkdir(parents=True, exist_ok=True)
    if lay.run_as:
        import stat

        for parent in (d.resolve(), *d.resolve().parents):
            if not parent.stat().st_mode & stat.S_IXOTH:
                raise SetupError(f"nginx's workers run as nobody and cannot reach {d}: {parent} is not o+x")
    write_users(Path(lay.htpasswd), users, d / "tmp", lay.run_as)
    conf = d / "nginx.conf"
    conf.write_text(render_conf(lay))
    return conf


def _stamp(paths: tuple[Path, ...]) -> tuple[float, ...]:
    """When the certificate files last changed (a Kubernetes Secret mount swaps a symlink: stat
    follows it)."""
    out = []
    for p in paths:
        try:
            out.append(p.stat().st_mtime)
        except OSError:
            out.append(-1.0)
    return tuple(out)


def run(settings: GatewaySettings) -> int:
    """nginx in the foreground as a child; SIGTERM / SIGINT / SIGQUIT are passed on, and a renewed
    certificate (cert-manager rotates the mounted Secret) is picked up with a reload (SIGHUP),
    checked every ``cert_check_interval_s``. Returns nginx's exit status."""
    import signal
    import subprocess

    conf = prepare(settings)
    exe = nginx_executable() or "/usr/sbin/nginx"
    cmd = [exe, "-e", "/dev/stderr", "-p", str(settings.run_dir), "-c", str(conf), "-g", "daemon off;"]
    proc = subprocess.Popen(cmd)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, lambda signum, _frame: proc.send_signal(signum))
    certs = (settings.certificate, settings.certificate_key)
    seen = _stamp(certs)
    while True:
        try:
            return proc.wait(timeout=settings.cert_check_interval_s)
        except subprocess.TimeoutExpired:
            now = _stamp(certs)
            if now != seen and all(t > 0 for t in now):
                print("gateway: the certificate changed, reloading nginx", flush=True)
                seen = now
                proc.send_signal(signal.SIGHUP)
