"""Shared fixtures. The stack fixtures are session-scoped and lazy: unit tests start nothing.

The real stack: a local OpenSearch with the k-NN plugin (reused when one of ours already runs on
the configured port, otherwise started here and stopped at the end) and a real Redis. Tests use
their own index prefix, so a developer's data under the default prefix is never touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings, load_settings
from brain_search.embedding import SentenceTransformerEmbedder, make_embedder
from brain_search.local_redis import LocalRedis
from brain_search.store.client import make_client
from brain_search.store.indices import install_all
from brain_search.store.local_node import LocalCluster
from brain_search.store.templates import delete_indices

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _quiet(msg: str) -> None:
    print(f"[stack] {msg}")


@pytest.fixture(scope="session")
def settings() -> Settings:
    # jobs are signed (ingest/signing.py) in every test that runs workers, as a deployment does
    prefix = os.environ.get("BRAIN_TEST_INDEX_PREFIX", "brain-test")
    # the default rate limit is raised: tests that loop over bad requests must not meet it
    # (tests/integration/test_rate_limits.py sets tenants' own limits)
    return load_settings(
        index_prefix=prefix, job_signing_keys="test-job-signing-key", rate_limit_per_s=10_000, rate_limit_burst=100_000
    )


@pytest.fixture(scope="session")
def opensearch_cluster(settings: Settings) -> Iterator[LocalCluster]:
    cluster = LocalCluster(settings, log=_quiet)
    started_here = not cluster.is_ours_running()
    cluster.start()
    yield cluster
    if started_here:
        cluster.stop()


@pytest.fixture(scope="session")
def stack_settings(settings: Settings, opensearch_cluster: LocalCluster) -> Settings:
    return settings.model_copy(update={"opensearch_url": opensearch_cluster.url})


@pytest.fixture(scope="session")
def client(stack_settings: Settings) -> OpenSearch:
    return make_client(stack_settings)


@pytest.fixture
def memories_index(client: OpenSearch, stack_settings: Settings) -> Iterator[str]:
    """A freshly created, empty memories index (wiped before each test)."""
    delete_indices(client, stack_settings)
    yield install_all(client, stack_settings)


@pytest.fixture(scope="session")
def redis_url(settings: Settings) -> Iterator[str]:
    redis = LocalRedis(settings, log=_quiet)
    started_here = not redis.running()
    url = redis.start()
    yield url
    if started_here:
        redis.stop()


@pytest.fixture(scope="session")
def embedder(settings: Settings) -> SentenceTransformerEmbedder:
    return make_embedder(settings)


ADMIN_KEY = "test-admin-key-not-secret"


@pytest.fixture(scope="session")
def api_state(stack_settings: Settings, embedder: SentenceTransformerEmbedder):  # type: ignore[no-untyped-def]
    """One AppState per test session (the model loads once); indices are wiped per test."""
    from pydantic import SecretStr

    from brain_search.api.app import build_state

    s = stack_settings.model_copy(update={"admin_key": SecretStr(ADMIN_KEY)})
    return build_state(s)


@pytest.fixture
def api(api_state, client: OpenSearch):  # type: ignore[no-untyped-def]
    """A TestClient over the real app and stack, on freshly wiped indices."""
    from fastapi.testclient import TestClient

    from brain_search.api.app import create_app
    from brain_search.ingest.service import make_ingest_service

    s = api_state.settings
    delete_indices(client, s)
    install_all(client, s, s.embedding_dimension)
    api_state.keys._cache.clear()
    api_state.ingest.close()
    api_state.ingest = make_ingest_service(s, client, api_state.embedder)  # a fresh queue per test
    with TestClient(create_app(state=api_state)) as tc:
        yield tc


@pytest.fixture
def make_tenant(api):  # type: ignore[no-untyped-def]
    """make_tenant("acme") -> headers carrying a fresh key of that tenant."""

    def _make(tenant_id: str) -> dict[str, str]:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        r = api.post("/v1/admin/tenants", json={"tenant_id": tenant_id}, headers=admin)
        assert r.status_code == 201, r.text
        r = api.post(f"/v1/admin/tenants/{tenant_id}/keys", json={"label": "test"}, headers=admin)
        assert r.status_code == 201, r.text
        return {"Authorization": f"Bearer {r.json()['key']}"}

    return _make


@pytest.fixture
def live_api(api, api_state) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The same app served by a real uvicorn on a free loopback port (for the browser and the
    HTTP CLI); yields its base URL. Shares the wiped indices and the state of `api`."""
    import socket
    import threading
    import time

    import uvicorn

    from brain_search.api.app import create_app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(state=api_state), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, name="live-api", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the live API server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
