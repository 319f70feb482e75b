"""The engine gateway for real: nginx from Debian's packages in front of the session's node, with
verified TLS and the admin / api / worker users. Each role's forbidden calls get 403 from nginx,
what it may do reaches OpenSearch, and nginx agrees with the Python twin of its rules."""

from __future__ import annotations

import os
import re
import socket
import ssl
import time
from collections.abc import Iterator

import httpx
import pytest

from brain_search.gateway.rules import Role, allowed
from brain_search.local.gateway import LocalGateway
from tests.conftest import DELIBERATE_DENIALS, SECURED, TEST_PREFIXES

P = os.environ.get("BRAIN_TEST_INDEX_PREFIX", "brain-test")  # the session's prefix (tests/conftest.py)
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
    (Role.api, "PUT", f"/{P}-new-index", None),
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
    # a worker's write cannot ask for the document back, nor widen what the answer may hold
    (Role.worker, "POST", f"/{M}/_bulk?_source=true", '{"delete": {"_id": "gw-none"}}\n'),
    (Role.worker, "POST", f"/{M}/_bulk?filter_path=items", '{"delete": {"_id": "gw-none"}}\n'),
    (Role.worker, "POST", f"/{M}/_mget?_source=tombstone_of%2Cmemory_id&filter_path=docs", '{"ids": ["gw-none"]}'),
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


SECRET = "Secret launch code name is BLUEHERON."
TENANT = "gw-tenant"


@pytest.fixture(scope="module")
def stored_memory(gw: LocalGateway) -> Iterator[str]:
    """One memory with text in the session's memories index, written as admin (and removed)."""
    doc = {"tenant_id": TENANT, "memory_id": "gw-secret", "content": SECRET}
    with http(gw, Role.admin) as c:
        r = c.put(f"/{M}/_doc/gw-secret?routing={TENANT}&refresh=true", json=doc)
        assert r.status_code in (200, 201), r.text
        yield "gw-secret"
        c.delete(f"/{M}/_doc/gw-secret?routing={TENANT}&refresh=true")


@pytest.mark.parametrize(
    "doc",
    [
        {"_source": True},
        {"_source": ["content"]},
        {"_source": {"includes": ["*"]}},
        {"stored_fields": ["content", "_source"]},
    ],
    ids=["source-true", "source-content", "source-includes", "stored-fields"],
)
def test_a_worker_mget_answers_no_text_whatever_its_body_asks(
    gw: LocalGateway, stored_memory: str, doc: dict[str, object]
) -> None:
    """Issue 54 item 9: a ``docs`` entry's own ``_source`` overrode the pinned one and the worker
    read the memory's text. The gateway now pins the answer (``filter_path``): ids, versions and
    the two tombstone fields."""
    body = {"docs": [{"_id": stored_memory, "routing": TENANT, **doc}]}
    with http(gw, Role.worker) as c:
        r = c.post(f"/{M}/_mget?_source=tombstone_of%2Cmemory_id", json=body)
    assert r.status_code == 200, r.text
    assert SECRET not in r.text and "BLUEHERON" not in r.text, r.text
    (got,) = r.json()["docs"]
    assert got["found"] and got["_id"] == stored_memory
    assert set(got.get("_source") or {}) <= {"memory_id", "tombstone_of"}, got


def test_a_worker_bulk_update_does_not_return_the_document(gw: LocalGateway, stored_memory: str) -> None:
    """Issue 54 item 9: a ``_bulk`` ``update`` with ``"_source": true`` answered the whole document
    (``get._source``). The worker's ``_bulk`` now answers statuses and errors only."""
    body = (
        f'{{"update": {{"_id": "{stored_memory}", "routing": "{TENANT}", "_source": true}}}}\n{{"doc": {{}}}}\n'
        f'{{"update": {{"_id": "{stored_memory}", "routing": "{TENANT}", "_source": "content"}}}}\n'
        f'{{"doc": {{"memory_id": "{stored_memory}"}}}}\n'
    )
    with http(gw, Role.worker) as c:
        r = c.post(f"/{M}/_bulk", content=body, headers={"Content-Type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    assert SECRET not in r.text and "BLUEHERON" not in r.text, r.text
    for item in r.json()["items"]:
        assert item["update"]["status"] == 200 and "get" not in item["update"], item
    with http(gw, Role.admin) as c:  # the write itself went through: the worker still writes
        assert c.get(f"/{M}/_doc/{stored_memory}?routing={TENANT}").json()["_source"]["content"] == SECRET


def test_the_worker_reads_queued_payloads_sealed(gw: LocalGateway, settings) -> None:  # type: ignore[no-untyped-def]
    """Issue 54 item 9: ``_search`` on the task records returned queued jobs' payloads (memory
    text) to the worker role. They are sealed under the job key now: the worker role's search
    reads ciphertext, the reconciler (same key) still opens them, and a payload the worker role
    writes into a record itself is not queued."""
    from brain_search.ingest.models import IngestJob, MemoryItem
    from brain_search.ingest.task_records import TaskRecords
    from brain_search.store.client import make_client

    assert settings.job_signing_keys is not None  # the session signs jobs, as a deployment does
    job = IngestJob(task_id="gw-sealed-task", tenant_id=TENANT, items=[MemoryItem(memory_id="m1", content=SECRET)])
    TaskRecords(make_client(gw.settings_for(Role.api, settings)), settings).create(job)
    forged = {**job.model_dump(mode="json"), "task_id": "gw-forged-task"}
    with http(gw, Role.worker) as c:
        r = c.put(
            f"/{P}-ingest-tasks/_doc/gw-forged-task?refresh=true",
            json={
                "tenant_id": TENANT,
                "state": "queued",
                "updated_at": "2020-01-01T00:00:00+00:00",
                "expires_at": "2999-01-01T00:00:00+00:00",
                "payload": forged,
            },
        )
        assert r.status_code in (200, 201), r.text
        c.post(f"/{P}-ingest-tasks/_refresh")
        r = c.post(f"/{P}-ingest-tasks/_search", json={"query": {"term": {"tenant_id": TENANT}}})
    assert r.status_code == 200, r.text
    hits = {h["_id"]: h["_source"] for h in r.json()["hits"]["hits"]}
    assert "BLUEHERON" not in str(hits["gw-sealed-task"]), hits["gw-sealed-task"]
    worker = TaskRecords(make_client(gw.settings_for(Role.worker, settings)), settings)
    found = dict(worker.stale_unfinished(grace_s=-60))
    assert IngestJob.model_validate(found["gw-sealed-task"]) == job  # the reconciler still has the job
    assert found["gw-forged-task"] is None  # and queues nothing it was not handed sealed: it gives it up


def test_a_bulk_body_cannot_name_another_index(gw: LocalGateway) -> None:
    """The path is the whole truth: the node refuses an index named inside a multi-request body."""
    body = f'{{"index": {{"_index": "{P}-keys", "_id": "forged"}}}}\n{{"tenant_id": "x"}}\n'
    with http(gw, Role.worker) as c:
        r = c.post(f"/{M}/_bulk", content=body, headers={"Content-Type": "application/x-ndjson"})
    assert r.status_code == 400 and "explicit index" in r.text, r.text
    msearch = f'{{"index": "{P}-keys"}}\n{{"query": {{"match_all": {{}}}}}}\n'
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

    from brain_search.gateway.certs import ensure_certificates

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
        [sys.executable, "-m", "brain_search.commands.cli", "gateway", "run"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
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
