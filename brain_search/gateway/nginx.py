"""The engine gateway of the local stack: nginx (Debian's package) in front of the loopback-bound
OpenSearch, with TLS and one basic-auth user per role (``gateway/rules.py``).

``opensearch-security`` 3.5.0.0 is not served by Maven Central, so the node itself runs without
authentication, bound to 127.0.0.1, and everything else reaches it only through this gateway:

- TLS 1.2/1.3 with a certificate of a local CA (``gateway_certs.py``; clients verify ``ca.pem``);
- users ``admin``, ``api`` and ``worker``, random passwords kept in ``credentials.json`` (0600)
  and as SHA-256-crypt hashes in ``htpasswd``;
- each role's rules as an nginx ``map`` over user, method and raw URI; anything else is 403.

``render_conf`` is pure (a deployment's ConfigMap and the compose file are rendered from it);
``LocalGateway`` writes the files and runs nginx in the foreground as a background process.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import ssl
import time
import urllib.error
import urllib.request
import warnings
from base64 import b64encode
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from brain_search.config import Settings
from brain_search.errors import SetupError
from brain_search.gateway.certs import ensure_certificates
from brain_search.gateway.rules import Role, render_map, render_upstream_map
from brain_search.local.procs import BackgroundProcess

# nginx checks the password on every request: SHA-256-crypt at 1000 rounds costs ~1 ms here
# (glibc's default 5000 is ~5.6 ms per request); the passwords are 192-bit random tokens, so the
# rounds guard nothing that a guess could reach
HASH_ROUNDS = 1000


@dataclass(frozen=True)
class GatewayLayout:
    """Where the gateway listens and reads its files (paths as nginx will see them)."""

    listen: str  # "127.0.0.1:9243" or "9200" (all interfaces, a container)
    upstream: tuple[str, ...]  # the nodes, "host:port" each
    certificate: str
    certificate_key: str
    htpasswd: str
    prefix_pattern: str  # a regex over index prefixes (``re.escape(prefix)`` for a deployment)
    pid_file: str | None = None
    error_log: str = "stderr"
    temp_dir: str | None = None
    run_as: str | None = None  # "nobody nogroup" when the master runs as root
    denied_log: str = "/dev/stdout"  # one line per refused request (403), nothing else is logged
    worker_processes: int = 1
    # a secured upstream (an operator's OpenSearch with its own security plugin): TLS verified
    # against this CA, and the gateway's own engine user sent as basic auth
    upstream_tls: bool = False
    upstream_ca: str | None = None
    upstream_authorization: SecretStr | None = None  # "Basic <base64>"


def render_conf(layout: GatewayLayout) -> str:
    """The whole nginx.conf of the gateway (pure)."""
    lines = []
    if layout.run_as:
        lines.append(f"user {layout.run_as};")
    lines += [
        f"worker_processes {layout.worker_processes};",
        f"error_log {layout.error_log} warn;",
    ]
    if layout.pid_file:
        lines.append(f"pid {layout.pid_file};")
    lines += ["events { worker_connections 1024; }", "", "http {"]
    body = [
        "server_tokens off;",
        "default_type application/json;",
    ]
    if layout.temp_dir:
        t = layout.temp_dir
        body += [
            f"client_body_temp_path {t}/body;",
            f"proxy_temp_path {t}/proxy;",
            f"fastcgi_temp_path {t}/fastcgi;",
            f"uwsgi_temp_path {t}/uwsgi;",
            f"scgi_temp_path {t}/scgi;",
        ]
    body += render_map(layout.prefix_pattern).splitlines()
    body += render_upstream_map(layout.prefix_pattern).splitlines()
    body += [
        "map $brain_allowed $brain_denied {",
        "    0 1;",
        "    default 0;",
        "}",
        "log_format brain_denied '$time_iso8601 $remote_addr $remote_user \"$request\" $status';",
        f"access_log {layout.denied_log} brain_denied if=$brain_denied;",
    ]
    body += [
        "upstream opensearch {",
        *[f"    server {u};" for u in layout.upstream],
        "    keepalive 64;",
        "}",
        "server {",
        f"    listen {layout.listen} ssl;",
        f"    ssl_certificate {layout.certificate};",
        f"    ssl_certificate_key {layout.certificate_key};",
        "    ssl_protocols TLSv1.2 TLSv1.3;",
        "    ssl_session_cache shared:brain_tls:1m;",
        '    auth_basic "brain-search engine";',
        f"    auth_basic_user_file {layout.htpasswd};",
        "    client_max_body_size 100m;",
        "    error_page 502 504 = @engine_down;",
        "    location / {",
        "        if ($brain_allowed = 0) {",
        '            return 403 \'{"error":{"type":"gateway_forbidden","reason":"this role may not make this'
        ' request"},"status":403}\';',
        "        }",
        # the raw URI, with the ``filter_path`` of a rule that pins what its answer may hold
        f"        proxy_pass {'https' if layout.upstream_tls else 'http'}://opensearch$brain_upstream_uri;",
        "        proxy_http_version 1.1;",
        '        proxy_set_header Connection "";',
        f'        proxy_set_header Authorization "{_authorization(layout)}";',
        *_upstream_tls(layout),
        "        proxy_request_buffering off;",
        "        proxy_read_timeout 300s;",
        "        proxy_send_timeout 300s;",
        "    }",
        "    location @engine_down {",
        '        return 502 \'{"error":{"type":"engine_unavailable","reason":"the gateway could not reach'
        ' OpenSearch"},"status":502}\';',
        "    }",
        "}",
    ]
    lines += [f"    {line}" if line else "" for line in body]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _authorization(layout: GatewayLayout) -> str:
    """What the gateway sends upstream: its own engine user for a secured upstream, else nothing
    (the client's credentials are the gateway's, never the engine's)."""
    if layout.upstream_authorization is None:
        return ""
    value = layout.upstream_authorization.get_secret_value()
    if not re.fullmatch(r"Basic [A-Za-z0-9+/=]+", value):
        raise ValueError("upstream_authorization must be 'Basic <base64>'")
    return value


def _upstream_tls(layout: GatewayLayout) -> list[str]:
    if not layout.upstream_tls:
        return []
    out = ["        proxy_ssl_verify on;", "        proxy_ssl_server_name on;", "        proxy_ssl_session_reuse on;"]
    if layout.upstream_ca:
        out.append(f"        proxy_ssl_trusted_certificate {layout.upstream_ca};")
    return out


def _libcrypt(password: str, setting: str) -> str | None:
    """crypt(3) from libcrypt through ctypes (Python 3.13 dropped the ``crypt`` module)."""
    import ctypes
    import ctypes.util

    lib = ctypes.CDLL(ctypes.util.find_library("crypt") or "libcrypt.so.1")
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    out = lib.crypt(password.encode(), setting.encode())
    return out.decode() if out else None


def _crypt(password: str, setting: str) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt  # the stdlib wrapper of crypt(3), present up to Python 3.12
        except ImportError:
            return _libcrypt(password, setting)
    return crypt.crypt(password, setting)


def hash_password(password: str, salt: str | None = None) -> str:
    """SHA-256-crypt (``$5$``), which nginx's ``auth_basic`` checks through crypt(3)."""
    salt = salt or secrets.token_hex(8)
    hashed = _crypt(password, f"$5$rounds={HASH_ROUNDS}${salt}")
    if not hashed or not hashed.startswith("$5$"):
        raise SetupError("this system's crypt(3) has no SHA-256-crypt")
    return hashed


# nginx's workers when its master runs as root (they read the hashes and write temp files)
WORKERS_RUN_AS = "nobody nogroup"


def nginx_run_as() -> str | None:
    return WORKERS_RUN_AS if os.geteuid() == 0 else None


def nginx_executable() -> str | None:
    return shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


def write_users(htpasswd: Path, users: Mapping[Role, SecretStr], temp_dir: Path, run_as: str | None) -> None:
    """``htpasswd`` with each role's SHA-256-crypt hash (created 0600) and nginx's temp dir; when
    its workers run as ``run_as`` ("user group"), the hashes become readable by that group only
    and the temp dir theirs."""
    fd = os.open(htpasswd, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("".join(f"{r.value}:{hash_password(p.get_secret_value())}\n" for r, p in users.items()))
    temp_dir.mkdir(parents=True, exist_ok=True)
    if run_as:
        import grp
        import pwd

        user, group = run_as.split()
        gid = grp.getgrnam(group).gr_gid
        os.chown(htpasswd, 0, gid)
        os.chmod(htpasswd, 0o640)
        os.chown(temp_dir, pwd.getpwnam(user).pw_uid, gid)
    else:
        os.chmod(htpasswd, 0o600)


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
