"""The engine gateway for real: nginx from Debian's packages in front of the session's node, with
verified TLS and the admin / api / worker users. Each role's forbidden calls get 403 from nginx,
what it may do reaches OpenSearch, and nginx agrees with the Python twin of its rules."""

from __future__ import annotations

import re
import socket
import ssl

import httpx
import pytest

from brain_search.store.gateway import LocalGateway
from brain_search.store.gateway_rules import Role, allowed
from tests.conftest import SECURED, TEST_PREFIXES

P = "brain-test"
M = f"{P}-memories"


@pytest.fixture(scope="module")
def gw(engine_gateway: LocalGateway, client) -> LocalGateway:  # type: ignore[no-untyped-def]
    from brain_search.store.indices import install_all

    install_all(client, client_settings(engine_gateway))
    return engine_gateway


def client_settings(gw: LocalGateway):  # type: ignore[no-untyped-def]
    return gw.settings_for(Role.admin)


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
