import pytest

from tests.conftest import ADMIN_KEY

pytestmark = pytest.mark.integration


def test_health_and_ready(api) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    r = api.get("/readyz")
    assert r.status_code == 200 and r.json()["status"] == "ready"
    assert "redis" not in r.json()  # embedded mode: no queue to check


def test_readiness_covers_redis_in_worker_mode(api_state, client, redis_url) -> None:
    from dataclasses import replace

    from fastapi.testclient import TestClient

    from brain_search.api.app import create_app
    from brain_search.ingest.modes import make_ingest_service

    for url, ready in ((redis_url, True), ("redis://127.0.0.1:1/0", False)):  # port 1: nothing listens
        s = api_state.settings.model_copy(update={"redis_url": url})
        state = replace(api_state, settings=s, ingest=make_ingest_service(s, client, api_state.embedder))
        with TestClient(create_app(state=state)) as tc:
            r = tc.get("/readyz")
            assert r.json()["redis"] is ready and (r.status_code == 200) is ready, r.text
            assert tc.get("/healthz").status_code == 200  # liveness does not care
        state.ingest.close()


def test_admin_needs_the_admin_key(api) -> None:
    assert api.post("/v1/admin/tenants", json={"tenant_id": "a"}).status_code == 401
    r = api.post("/v1/admin/tenants", json={"tenant_id": "a"}, headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401


def test_key_lifecycle(api, make_tenant) -> None:
    headers = make_tenant("acme")
    key = headers["Authorization"].split()[1]
    state = api.app.state.brain
    assert state.keys.resolve(key) == "acme"
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    key_id = key.split("_")[1]
    assert api.delete(f"/v1/admin/keys/{key_id}", headers=admin).status_code == 204
    from brain_search.errors import Unauthorized

    with pytest.raises(Unauthorized, match="revoked"):
        state.keys.resolve(key)
    assert api.delete("/v1/admin/keys/doesnotexist", headers=admin).status_code == 404


def test_bad_tenant_id_is_422(api) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    r = api.post("/v1/admin/tenants", json={"tenant_id": "-bad id"}, headers=admin)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"][-1] == "tenant_id"


def test_keys_expire_and_every_change_is_audited(api) -> None:
    import time
    from datetime import UTC, datetime, timedelta

    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    assert api.post("/v1/admin/tenants", json={"tenant_id": "audited"}, headers=admin).status_code == 201
    soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
    made = api.post("/v1/admin/tenants/audited/keys", json={"label": "short", "expires_at": soon}, headers=admin)
    assert made.status_code == 201 and made.json()["expires_at"], made.text
    short = {"Authorization": f"Bearer {made.json()['key']}"}
    assert api.get("/v1/memories", headers=short).status_code == 200
    time.sleep(2.2)
    expired = api.get("/v1/memories", headers=short)
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]
    past = api.post("/v1/admin/tenants/audited/keys", json={"expires_at": "2020-01-01T00:00:00Z"}, headers=admin)
    assert past.status_code == 422 and past.json()["detail"][0]["loc"][-1] == "expires_at"
    limit = {"requests_per_s": 5, "burst": 10}
    assert api.put("/v1/admin/tenants/audited/rate-limit", json=limit, headers=admin).status_code == 200
    key_id = made.json()["key_id"]
    assert api.delete(f"/v1/admin/keys/{key_id}", headers=admin).status_code == 204

    log = api.get("/v1/admin/audit", params={"tenant": "audited"}, headers=admin).json()
    actions = [e["action"] for e in reversed(log)]
    assert actions == ["tenant.create", "key.create", "tenant.rate_limit", "key.revoke"], actions
    assert all(e["tenant_id"] == "audited" and e["actor"] == "admin" for e in log)
    assert not any("key" in str(e.get("detail", {})).lower() and "bsk_" in str(e) for e in log)  # never a key
    assert api.get("/v1/admin/audit", headers=short).status_code == 401  # admin only

    # the erase takes its entries with it and leaves one naming it by hash only
    assert api.delete("/v1/admin/tenants/audited", headers=admin).status_code == 200
    after = api.get("/v1/admin/audit", params={"tenant": "audited"}, headers=admin).json()
    assert [e["action"] for e in after] == ["tenant.erase"] and "tenant_id" not in after[0]


def test_the_admin_api_on_its_own_listener(stack_settings, role_env, tmp_path) -> None:
    """`brain-search serve` with BRAIN_ADMIN_PORT: one process, two listeners; /v1/admin/* answers
    only on the admin port (404 on the public one, where an Ingress points); an idle connection
    outlives uvicorn's 5 s keep-alive."""
    import os
    import socket
    import subprocess
    import sys
    import time

    import httpx

    def free() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    public, admin_port = free(), free()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "BRAIN_OPENSEARCH_URL": stack_settings.opensearch_url,
        "BRAIN_INDEX_PREFIX": stack_settings.index_prefix,
        "BRAIN_CACHE_DIR": str(stack_settings.cache_dir),
        "BRAIN_ADMIN_KEY": ADMIN_KEY,
        "BRAIN_API_HOST": "127.0.0.1",
        "BRAIN_API_PORT": str(public),
        "BRAIN_ADMIN_PORT": str(admin_port),
        **role_env("api"),
    }
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "brain_search.commands.cli", "serve"], env=env, stdout=log, stderr=log
    )
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{public}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()[-2000:]
            time.sleep(0.5)
        body = {"tenant_id": f"listener-{os.getpid()}-{int(time.time())}"}  # a reused stack keeps tenants
        on_public = httpx.post(f"http://127.0.0.1:{public}/v1/admin/tenants", json=body, headers=admin, timeout=30)
        assert on_public.status_code == 404 and "own listener" in on_public.text
        on_admin = httpx.post(f"http://127.0.0.1:{admin_port}/v1/admin/tenants", json=body, headers=admin, timeout=30)
        assert on_admin.status_code == 201, on_admin.text
        assert httpx.get(f"http://127.0.0.1:{public}/healthz", timeout=5).status_code == 200
        # a connection idle past uvicorn's own 5 s keep-alive is still open (BRAIN_API_KEEPALIVE_S,
        # 75 s): a proxy's or client's pool never sends on a connection the API just closed
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", public, timeout=10)
        try:
            conn.request("GET", "/healthz")
            assert conn.getresponse().read() and conn.sock is not None
            first = conn.sock.getsockname()
            time.sleep(6.5)
            conn.request("GET", "/healthz")
            resp = conn.getresponse()
            assert resp.status == 200 and resp.read()
            assert conn.sock.getsockname() == first  # the same connection, not a reconnect
        finally:
            conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
