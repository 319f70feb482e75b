"""The engine gateway for real: nginx from Debian's packages in front of the session's node, with
verified TLS and the admin / api / worker users. Each role's forbidden calls get 403 from nginx,
what it may do reaches OpenSearch, and nginx agrees with the Python twin of its rules."""

from __future__ import annotations

import re
import socket
import ssl
import time
from collections.abc import Iterator

import httpx
import pytest

from brain_search.store.gateway import LocalGateway
from brain_search.store.gateway_rules import Role, allowed
from tests.conftest import DELIBERATE_DENIALS, SECURED, TEST_PREFIXES

P = "brain-test"
M = f"{P}-memories"


@pytest.fixture(scope="module")
def gw(engine_gateway: LocalGateway, client) -> Iterator[LocalGateway]:  # type: ignore[no-untyped-def]
    """The session's gateway; the refusals this module provokes are counted as asked for (the
    session's end checks that the gateway refused nothing else)."""
    from brain_search.store.indices import install_all

    install_all(client, engine_gateway.settings_for(Role.admin))
    log = engine_gateway.dir / "denied.log"

    def count() -> int:
        return len(log.read_text().splitlines()) if log.exists() else 0

    before = count()
    yield engine_gateway
    time.sleep(0.2)  # nginx writes its log line after the response
    DELIBERATE_DENIALS[0] += count() - before


def http(gw: LocalGateway, role: Role | None, password: str | None = None) -> httpx.Client:
    auth = None
    if role is not None:
        auth = (role.value, password or gw.credentials()[role].get_secret_value())
    return httpx.Client(base_url=gw.url, auth=auth, verify=ssl.create_default_context(cafile=str(gw.ca_file)))


def test_tls_is_verified_and_plain_http_is_refused(gw: LocalGateway) -> None:
    with httpx.Client(base_url=gw.url, verify=True) as c, pytest.raises(httpx.ConnectError, match="CERTIFICATE"):
        c.get("/")  # the system's trust store does not hold the local CA
    with http(gw, Role.admin) as c:
        assert c.get("/").status_code == 200
    r = httpx.get(f"http://127.0.0.1:{gw.port}/")
    assert r.status_code == 400  # nginx: "The plain HTTP request was sent to HTTPS port"
    with socket.create_connection(("127.0.0.1", gw.port)) as sock:
        ctx = ssl.create_default_context(cafile=str(gw.ca_file))
        with ctx.wrap_socket(sock, server_hostname="127.0.0.1") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")


def test_no_or_wrong_credentials_are_401(gw: LocalGateway) -> None:
    with http(gw, None) as c:
        assert c.get(f"/{M}/_search").status_code == 401
    with http(gw, Role.api, password="not-the-password") as c:
        r = c.get(f"/{M}/_search")
        assert r.status_code == 401
    with httpx.Client(base_url=gw.url, auth=("mallory", "x"), verify=str(gw.ca_file)) as c:
        assert c.get(f"/{M}/_search").status_code in (401, 403)


# (role, method, uri, body): what each role sends; nginx must answer 403 exactly when the rules
# say no, and pass everything else to OpenSearch
CASES: list[tuple[Role, str, str, str | None]] = [
    # the api role: documents and searches of its own prefix
    (Role.api, "GET", f"/{M}/_search", '{"size": 0}'),
    (Role.api, "POST", f"/{M}/_count", None),
    (Role.api, "HEAD", f"/{M}", None),
    (Role.api, "GET", f"/_alias/{M}", None),
    (Role.api, "GET", f"/{P}-tenants/_doc/nobody", None),
    (Role.api, "PUT", "/brain-test-new-index", None),
    (Role.api, "DELETE", f"/{M}", None),
    (Role.api, "PUT", f"/{M}/_mapping", '{"properties": {"x": {"type": "keyword"}}}'),
    (Role.api, "PUT", "/_cluster/settings", '{"persistent": {}}'),
    (Role.api, "GET", "/_search", None),
    (Role.api, "GET", "/_all/_search", None),
    (Role.api, "GET", "/other-memories/_search", None),
    (Role.api, "GET", "/_cat/indices", None),
    (Role.api, "POST", "/_snapshot/x/y", None),
    (Role.api, "GET", f"/{M}%2C.kibana/_search", None),
    # the worker role: write-only on memories
    (Role.worker, "POST", f"/{M}/_bulk", '{"delete": {"_id": "gw-none"}}\n'),
    (Role.worker, "POST", f"/{M}/_mget?_source=tombstone_of%2Cmemory_id", '{"ids": ["gw-none"]}'),
    (Role.worker, "POST", f"/{M}/_mget?_source=content", '{"ids": ["gw-none"]}'),
    (Role.worker, "POST", f"/{M}/_mget", '{"ids": ["gw-none"]}'),
    (Role.worker, "GET", f"/{M}/_search", None),
    (Role.worker, "GET", f"/{M}/_doc/gw-none", None),
    (Role.worker, "POST", f"/{M}/_delete_by_query", '{"query": {"match_all": {}}}'),
    (Role.worker, "GET", f"/{P}-keys/_search", None),
    (Role.worker, "POST", f"/{P}-ingest-tasks/_search", '{"size": 0}'),
    (Role.worker, "HEAD", f"/{P}-dead-letters", None),
    (Role.worker, "DELETE", f"/{P}-dead-letters", None),
]


@pytest.mark.parametrize(("role", "method", "uri", "body"), CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_each_role_reaches_only_what_its_rules_allow(
    gw: LocalGateway, role: Role, method: str, uri: str, body: str | None
) -> None:
    expect = allowed(re.escape(P) + TEST_PREFIXES, role.value, method, uri)
    headers = {"Content-Type": "application/x-ndjson" if uri.endswith("_bulk") else "application/json"}
    with http(gw, role) as c:
        r = c.request(method, uri, content=body, headers=headers)
    if expect:
        assert r.status_code != 403, r.text
        assert r.status_code < 500, r.text
    else:
        assert r.status_code == 403, r.text
        if method != "HEAD":
            assert r.json()["error"]["type"] == "gateway_forbidden"


def test_a_bulk_body_cannot_name_another_index(gw: LocalGateway) -> None:
    """The path is the whole truth: the node refuses an index named inside a multi-request body."""
    body = '{"index": {"_index": "brain-test-keys", "_id": "forged"}}\n{"tenant_id": "x"}\n'
    with http(gw, Role.worker) as c:
        r = c.post(f"/{M}/_bulk", content=body, headers={"Content-Type": "application/x-ndjson"})
    assert r.status_code == 400 and "explicit index" in r.text, r.text
    msearch = '{"index": "brain-test-keys"}\n{"query": {"match_all": {}}}\n'
    with http(gw, Role.api) as c:
        r = c.post(f"/{M}/_msearch", content=msearch, headers={"Content-Type": "application/x-ndjson"})
    assert r.status_code == 400 or "explicit index" in r.text, r.text


def test_a_dead_engine_is_a_json_502(gw: LocalGateway) -> None:
    """What a client sees from the gateway when nothing listens upstream (here: a gateway in front
    of a closed port)."""
    s = gw.settings.model_copy(update={"gateway_port": gw.port + 1})
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    dead = LocalGateway(s, upstream_port=closed, log=lambda _: None)
    try:
        with pytest.raises(Exception, match="did not answer"):
            dead.start(timeout_s=2)
        with http(dead, Role.admin) as c:
            r = c.get("/")
        assert r.status_code == 502 and r.json()["error"]["type"] == "engine_unavailable"
    finally:
        dead.stop()


@pytest.mark.skipif(not SECURED, reason="a secured run (BRAIN_TEST_SECURED=1) only")
def test_a_secured_run_serves_as_the_api_role(api_state, gw: LocalGateway) -> None:  # type: ignore[no-untyped-def]
    """In a secured run the API state reaches the engine only through the gateway, as ``api``,
    verifying the gateway's certificate, and cannot create an index."""
    from opensearchpy.exceptions import AuthorizationException

    s = api_state.settings
    assert (s.opensearch_url, s.opensearch_user, s.index_setup) == (gw.url, "api", "verify")
    assert s.opensearch_verify_certs and s.opensearch_ca_certs == gw.ca_file
    with pytest.raises(AuthorizationException):
        api_state.client.indices.create(index=f"{P}-made-by-the-api")


def test_the_deployment_gateway_serves_the_roles_and_reloads_a_renewed_certificate(
    opensearch_cluster, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """`brain-search gateway run` as compose and the chart start it (users from BRAIN_GATEWAY_*,
    mounted certificates), in front of the session's node; a renewed certificate is served after
    the reload, without a restart."""
    import hashlib
    import os
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from brain_search.store.gateway_certs import ensure_certificates

    ca1, cert1, key1 = ensure_certificates(tmp_path / "one")
    mount = tmp_path / "mount"
    mount.mkdir()
    shutil.copy(cert1, mount / "tls.crt")
    shutil.copy(key1, mount / "tls.key")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # as root, nginx's workers run as nobody: the run dir must be reachable (pytest's is 0700)
    run_dir = Path(tempfile.mkdtemp(prefix="brain-gateway-"))
    run_dir.chmod(0o755)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")},
        "BRAIN_GATEWAY_LISTEN": f"127.0.0.1:{port}",
        "BRAIN_GATEWAY_UPSTREAM": opensearch_cluster.url,
        "BRAIN_GATEWAY_CERTIFICATE": str(mount / "tls.crt"),
        "BRAIN_GATEWAY_CERTIFICATE_KEY": str(mount / "tls.key"),
        "BRAIN_GATEWAY_API_PASSWORD": "api-password-0123456789",
        "BRAIN_GATEWAY_WORKER_PASSWORD": "worker-password-0123456789",
        "BRAIN_GATEWAY_RUN_DIR": str(run_dir),
        "BRAIN_GATEWAY_CERT_CHECK_INTERVAL_S": "0.3",
        "BRAIN_INDEX_PREFIX": P,
    }
    log = (tmp_path / "gateway.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "brain_search.cli", "gateway", "run"], env=env, stdout=log, stderr=subprocess.STDOUT
    )

    def served_fingerprint() -> str:
        der = ssl.get_server_certificate(("127.0.0.1", port))
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(der)).hexdigest()

    def fingerprint(pem) -> str:  # type: ignore[no-untyped-def]
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem.read_text())).hexdigest()

    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with httpx.Client(auth=("api", "api-password-0123456789"), verify=str(ca1)) as c:
                    r = c.get(f"https://127.0.0.1:{port}/{M}/_count")
                break
            except httpx.ConnectError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "gateway.log").read_text()
                time.sleep(0.2)
        assert r.status_code in (200, 404), r.text  # reached the node (404: no such index yet)
        with httpx.Client(auth=("api", "api-password-0123456789"), verify=str(ca1)) as c:
            assert c.put(f"https://127.0.0.1:{port}/{P}-x").status_code == 403
        with httpx.Client(auth=("admin", "anything-at-all-000"), verify=str(ca1)) as c:
            assert c.get(f"https://127.0.0.1:{port}/").status_code in (401, 403)  # no admin user given
        assert served_fingerprint() == fingerprint(cert1)
        _, cert2, key2 = ensure_certificates(tmp_path / "two")
        shutil.copy(key2, mount / "tls.key")
        shutil.copy(cert2, mount / "tls.crt")
        deadline = time.monotonic() + 10
        while served_fingerprint() != fingerprint(cert2):
            assert time.monotonic() < deadline, (tmp_path / "gateway.log").read_text()
            time.sleep(0.2)
        assert proc.poll() is None
    finally:
        proc.terminate()
        code = proc.wait(timeout=15)
        shutil.rmtree(run_dir, ignore_errors=True)
    assert code == 0, (tmp_path / "gateway.log").read_text()
