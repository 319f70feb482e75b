"""The engine gateway of the local stack: nginx (Debian's package) in front of the loopback-bound
OpenSearch, with TLS and one basic-auth user per role (``gateway/rules.py``).

``opensearch-security`` 3.5.0.0 is not served by Maven Central, so the node itself runs without
authentication, bound to 127.0.0.1, and everything else reaches it only through this gateway:

- TLS 1.2/1.3 with a certificate of a local CA (``gateway_certs.py``; clients verify ``ca.pem``);
- users ``admin``, ``api`` and ``worker``, random passwords kept in ``credentials.json`` (0600)
  and as SHA-256-crypt hashes in ``htpasswd``;
- each role's rules as an nginx ``map`` over user, method and raw URI; anything else is 403.

``render_conf`` is pure (a deployment's ConfigMap and the compose file are rendered from it);
``local/gateway.py``'s ``LocalGateway`` writes the files and runs nginx in the foreground as a background process.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from brain_search.errors import SetupError
from brain_search.gateway.rules import Role, render_map, render_upstream_map

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
