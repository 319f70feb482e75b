"""The gateway's nginx.conf and a deployment's gateway settings (pure; nginx itself is exercised
in tests/integration/test_engine_gateway.py)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
from pydantic import SecretStr

from brain_search.errors import SetupError
from brain_search.gateway.certs import ensure_certificates
from brain_search.gateway.nginx import GatewayLayout, _libcrypt, hash_password, render_conf
from brain_search.gateway.rules import Role
from brain_search.gateway.service import GatewaySettings, layout, passwords, prepare

LAYOUT = GatewayLayout(
    listen="9200",
    upstream=("opensearch-1:9200", "opensearch-2:9200"),
    certificate="/tls/tls.crt",
    certificate_key="/tls/tls.key",
    htpasswd="/run/htpasswd",
    prefix_pattern="brain",
)


def test_the_conf_denies_by_default_and_strips_the_clients_credentials() -> None:
    conf = render_conf(LAYOUT)
    assert "default 0;" in conf and "if ($brain_allowed = 0)" in conf
    assert 'proxy_set_header Authorization "";' in conf  # the engine never sees a role's password
    assert "server opensearch-1:9200;" in conf and "server opensearch-2:9200;" in conf
    assert "ssl_protocols TLSv1.2 TLSv1.3;" in conf and "proxy_pass http://opensearch$brain_upstream_uri;" in conf
    assert "proxy_ssl_verify" not in conf


def test_a_secured_upstream_is_verified_and_gets_the_gateways_own_user() -> None:
    s = GatewaySettings(
        upstream="https://os-0:9200,https://os-1:9200",
        upstream_ca=Path("/ca/ca.crt"),
        upstream_user="brain-gateway",
        upstream_password=SecretStr("s3cret"),
        api_password=SecretStr("a" * 20),
        worker_password=SecretStr("w" * 20),
    )
    conf = render_conf(layout(s))
    assert "proxy_pass https://opensearch$brain_upstream_uri;" in conf and "proxy_ssl_verify on;" in conf
    assert "proxy_ssl_trusted_certificate /ca/ca.crt;" in conf
    assert 'proxy_set_header Authorization "Basic YnJhaW4tZ2F0ZXdheTpzM2NyZXQ=";' in conf


@pytest.mark.parametrize("upstream", ["", "http://a:1,https://b:2", "a", "ftp://a:1", "a:1;evil"])
def test_a_bad_upstream_is_refused(upstream: str) -> None:
    s = GatewaySettings(upstream=upstream, api_password=SecretStr("a" * 20), worker_password=SecretStr("w" * 20))
    with pytest.raises(SetupError, match="BRAIN_GATEWAY_UPSTREAM"):
        layout(s)


def test_role_passwords_are_required_and_long() -> None:
    with pytest.raises(SetupError, match="required"):
        passwords(GatewaySettings(api_password=SecretStr("a" * 20)))
    with pytest.raises(SetupError, match="16 characters"):
        passwords(GatewaySettings(api_password=SecretStr("short"), worker_password=SecretStr("w" * 20)))
    got = passwords(GatewaySettings(api_password=SecretStr("a" * 20), worker_password=SecretStr("w" * 20)))
    assert set(got) == {Role.api, Role.worker}  # no admin user unless given one


def test_hashes_are_sha256_crypt_that_verify() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt as c

    h = hash_password("correct horse", salt="abcdefgh")
    assert h.startswith("$5$rounds=1000$abcdefgh$")
    assert c.crypt("correct horse", h) == h and c.crypt("wrong", h) != h
    # the path Python 3.13 takes (no ``crypt`` module): libcrypt through ctypes, the same hash
    assert _libcrypt("correct horse", "$5$rounds=1000$abcdefgh$") == h


@pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(), reason="no nginx")
def test_nginx_accepts_the_rendered_conf(tmp_path: Path) -> None:
    """``nginx -t`` on what ``gateway run`` writes (a deployment's conf, real certificates)."""
    ensure_certificates(tmp_path / "tls")
    # as root, nginx's workers run as nobody: the run dir must be reachable (pytest's is 0700)
    run_dir = Path(tempfile.mkdtemp(prefix="brain-gateway-"))
    run_dir.chmod(0o755)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = GatewaySettings(
        upstream="127.0.0.1:9",
        certificate=tmp_path / "tls" / "server.pem",
        certificate_key=tmp_path / "tls" / "server.key",
        api_password=SecretStr("a" * 20),
        worker_password=SecretStr("w" * 20),
        admin_password=SecretStr("x" * 20),
        run_dir=run_dir,
        listen=f"127.0.0.1:{port}",
    )
    conf = prepare(s)
    exe = shutil.which("nginx") or "/usr/sbin/nginx"
    text = conf.read_text().replace("/dev/stdout", str(tmp_path / "denied.log"))
    conf.write_text(text)
    r = subprocess.run(
        [exe, "-t", "-e", str(tmp_path / "err.log"), "-p", str(tmp_path), "-c", str(conf)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    users = (run_dir / "htpasswd").read_text().splitlines()
    shutil.rmtree(run_dir)
    assert [u.split(":")[0] for u in users] == ["admin", "api", "worker"]


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only (nginx's workers then run as nobody)")
def test_a_run_dir_nobody_cannot_reach_is_refused_up_front(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "tls.crt").write_text("x")
    (private / "tls.key").write_text("x")
    s = GatewaySettings(
        certificate=private / "tls.crt",
        certificate_key=private / "tls.key",
        api_password=SecretStr("a" * 20),
        worker_password=SecretStr("w" * 20),
        run_dir=private / "run",
    )
    with pytest.raises(SetupError, match="cannot reach"):
        prepare(s)
