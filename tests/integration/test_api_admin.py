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
    from brain_search.ingest.service import make_ingest_service

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
