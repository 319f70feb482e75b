"""The engine gateway of the local stack: nginx (``gateway/nginx.py``'s config, users and TLS) run
as a process of this machine in front of the local node, one basic-auth user per role."""

from __future__ import annotations

import json
import os
import re
import secrets
import ssl
import time
import urllib.error
import urllib.request
from base64 import b64encode
from collections.abc import Callable
from pathlib import Path

from pydantic import SecretStr

from brain_search.config import Settings
from brain_search.errors import SetupError
from brain_search.gateway.certs import ensure_certificates
from brain_search.gateway.nginx import (
    GatewayLayout,
    nginx_executable,
    nginx_run_as,
    render_conf,
    write_users,
)
from brain_search.gateway.rules import Role
from brain_search.local.procs import BackgroundProcess


def gateway_port(settings: Settings) -> int:
    return settings.gateway_port or settings.opensearch_http_port + 43


class LocalGateway:
    """The gateway of a local node: files under ``<cache>/gateway/<port>``, nginx in the foreground."""

    def __init__(
        self, settings: Settings, upstream_port: int | None = None, log: Callable[[str], None] = print
    ) -> None:
        self.settings = settings
        self.port = gateway_port(settings)
        self.upstream_port = upstream_port or settings.opensearch_http_port
        self.dir: Path = settings.cache_dir / "gateway" / str(self.port)
        self.process = BackgroundProcess("nginx", self.dir)
        self.log = log

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        return self.dir / "tls" / "ca.pem"

    @property
    def credentials_file(self) -> Path:
        return self.dir / "credentials.json"

    def credentials(self) -> dict[Role, SecretStr]:
        """Each role's password (made once and kept, so a restart keeps clients' settings valid)."""
        if self.credentials_file.exists():
            raw = json.loads(self.credentials_file.read_text())
            return {Role(k): SecretStr(v) for k, v in raw.items()}
        self.dir.mkdir(parents=True, exist_ok=True)
        made = {r.value: secrets.token_urlsafe(24) for r in Role}
        fd = os.open(self.credentials_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(made, f)
        return {Role(k): SecretStr(v) for k, v in made.items()}

    def settings_for(self, role: Role, settings: Settings | None = None) -> Settings:
        """``settings`` with the engine reached through this gateway as ``role``; the api and
        worker roles only verify the indices (``index_setup``), they cannot create them."""
        base = settings or self.settings
        update: dict[str, object] = {
            "opensearch_url": self.url,
            "opensearch_user": role.value,
            "opensearch_password": self.credentials()[role],
            "opensearch_ca_certs": self.ca_file,
            "opensearch_verify_certs": True,
        }
        if role != Role.admin:
            update["index_setup"] = "verify"
        return base.model_copy(update=update)

    def env_for(self, role: Role) -> dict[str, str]:
        """The same as environment variables (for worker and API processes)."""
        env = {
            "BRAIN_OPENSEARCH_URL": self.url,
            "BRAIN_OPENSEARCH_USER": role.value,
            "BRAIN_OPENSEARCH_PASSWORD": self.credentials()[role].get_secret_value(),
            "BRAIN_OPENSEARCH_CA_CERTS": str(self.ca_file),
            "BRAIN_OPENSEARCH_VERIFY_CERTS": "true",
        }
        if role != Role.admin:
            env["BRAIN_INDEX_SETUP"] = "verify"
        return env

    def layout(self, prefix_pattern: str | None = None) -> GatewayLayout:
        return GatewayLayout(
            listen=f"127.0.0.1:{self.port}",
            upstream=(f"127.0.0.1:{self.upstream_port}",),
            certificate=str(self.dir / "tls" / "server.pem"),
            certificate_key=str(self.dir / "tls" / "server.key"),
            htpasswd=str(self.dir / "htpasswd"),
            prefix_pattern=prefix_pattern or re.escape(self.settings.index_prefix),
            pid_file=str(self.dir / "nginx-master.pid"),
            error_log=str(self.dir / "error.log"),
            temp_dir=str(self.dir / "tmp"),
            run_as=nginx_run_as(),
            denied_log=str(self.dir / "denied.log"),
        )

    def running(self) -> bool:
        return self.process.running()

    def start(self, prefix_pattern: str | None = None, timeout_s: float = 20.0) -> str:
        """Write certificates, users and the config, start nginx (reused when running); returns the URL."""
        if self.running():
            return self.url
        exe = nginx_executable()
        if not exe:
            raise SetupError("nginx is missing; install Debian's nginx package (scripts/bootstrap.sh does)")
        ensure_certificates(self.dir / "tls")
        layout = self.layout(prefix_pattern)
        write_users(Path(layout.htpasswd), self.credentials(), self.dir / "tmp", layout.run_as)
        if layout.run_as:  # nginx's workers (nobody) reach the hashes through this directory
            self.dir.chmod(0o755)
        (self.dir / "nginx.conf").write_text(render_conf(layout))
        cmd = [
            exe,
            "-e",
            layout.error_log,
            "-p",
            str(self.dir),
            "-c",
            str(self.dir / "nginx.conf"),
            "-g",
            "daemon off;",
        ]
        self.log(f"starting the engine gateway (nginx, TLS + roles) on {self.url} → 127.0.0.1:{self.upstream_port}")
        self.process.start(cmd, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        self.wait(timeout_s)
        return self.url

    def wait(self, timeout_s: float) -> None:
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        token = b64encode(f"admin:{self.credentials()[Role.admin].get_secret_value()}".encode()).decode()
        req = urllib.request.Request(f"{self.url}/_cluster/health", headers={"Authorization": f"Basic {token}"})
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            if not self.running():
                raise SetupError("the engine gateway (nginx) exited while starting", self._tail())
            try:
                with urllib.request.urlopen(req, timeout=2, context=ctx) as resp:
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise SetupError(f"the engine gateway did not answer through to OpenSearch ({last})", self._tail())

    def _tail(self) -> str:
        log = self.dir / "error.log"
        parts = [self.process.tail()]
        if log.exists():
            parts.append("\n".join(log.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(p for p in parts if p)

    def stop(self) -> None:
        """Fast shutdown: SIGTERM to nginx's process group, SIGKILL after 10 s."""
        self.process.stop(timeout_s=10)
