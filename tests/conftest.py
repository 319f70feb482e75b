"""Shared fixtures. The stack fixtures are session-scoped and lazy: unit tests start nothing.

The real stack: a local OpenSearch with the k-NN plugin (reused when one of ours already runs on
the configured port, otherwise started here and stopped at the end) and a real Redis. Tests use
their own index prefix, so a developer's data under the default prefix is never touched.

``BRAIN_TEST_SECURED=1``: every engine call goes through the engine gateway (gateway/nginx.py:
nginx, verified TLS, one user per role). The fixtures' own client is ``admin``; the API state,
the API and MCP processes get the ``api`` role and worker processes the ``worker`` role, both with
``index_setup = "verify"`` (``as_role`` / ``role_env``), as a secured deployment runs them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings, load_settings
from brain_search.encoders.embedding import SentenceTransformerEmbedder
from brain_search.encoders.factory import make_embedder
from brain_search.gateway.rules import Role
from brain_search.local.gateway import LocalGateway
from brain_search.local.node import LocalCluster
from brain_search.local.redis_server import LocalRedis
from brain_search.store.client import make_client
from brain_search.store.indices import install_all
from brain_search.store.templates import delete_indices

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SECURED = os.environ.get("BRAIN_TEST_SECURED") == "1"
# the prefixes a test run uses: its own, and per-test ones after it (``-w1234``, ``-rl`` ...)
TEST_PREFIXES = r"(?:-[a-z0-9]+)*"
# refusals the gateway's own tests provoke on purpose (tests/integration/test_engine_gateway.py)
DELIBERATE_DENIALS = [0]


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
def engine_gateway(settings: Settings, opensearch_cluster: LocalCluster) -> Iterator[LocalGateway]:
    """The engine gateway in front of the session's node, on its own port (node port + 44: a
    developer's `up --secured` gateway on + 43 is left alone), restarted with the test prefixes'
    rules (started lazily: only secured runs and the gateway's own tests ask for it)."""
    port = settings.gateway_port or settings.opensearch_http_port + 44
    gateway = LocalGateway(settings.model_copy(update={"gateway_port": port}), log=_quiet)
    gateway.stop()
    denied = gateway.dir / "denied.log"
    denied.unlink(missing_ok=True)
    gateway.start(prefix_pattern=re.escape(settings.index_prefix) + TEST_PREFIXES)
    yield gateway
    gateway.stop()
    # every refusal must be one a test asked for: a request of the service itself that its role
    # may not make is a bug of the rules or of the service
    lines = denied.read_text().splitlines() if denied.exists() else []
    unexpected = lines[DELIBERATE_DENIALS[0] :]
    print(f"[stack] gateway refusals: {len(lines)}, asked for by tests: {DELIBERATE_DENIALS[0]}")
    assert len(lines) == DELIBERATE_DENIALS[0], f"the gateway refused requests of the service: {unexpected}"


@pytest.fixture(scope="session")
def stack_settings(request: pytest.FixtureRequest, settings: Settings, opensearch_cluster: LocalCluster) -> Settings:
    if SECURED:
        return request.getfixturevalue("engine_gateway").settings_for(Role.admin, settings)  # type: ignore[no-any-return]
    return settings.model_copy(update={"opensearch_url": opensearch_cluster.url})


@pytest.fixture(scope="session")
def as_role(request: pytest.FixtureRequest) -> Callable[[Settings, str], Settings]:
    """as_role(settings, "api" | "worker") → the settings a process of that role runs with: the
    same settings unless the run is secured, then the role's gateway user and index verification."""
    gateway: LocalGateway | None = request.getfixturevalue("engine_gateway") if SECURED else None

    def _as(s: Settings, role: str) -> Settings:
        if gateway is None:
            return s
        return gateway.settings_for(Role(role), s)

    return _as


@pytest.fixture(scope="session")
def role_env(request: pytest.FixtureRequest) -> Callable[[str], dict[str, str]]:
    """role_env("api") → the BRAIN_OPENSEARCH_* variables of a child process of that role ({} unless
    the run is secured)."""
    gateway: LocalGateway | None = request.getfixturevalue("engine_gateway") if SECURED else None

    def _env(role: str) -> dict[str, str]:
        if gateway is None:
            return {}
        return gateway.env_for(Role(role))

    return _env


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
def api_state(stack_settings: Settings, client: OpenSearch, as_role, embedder: SentenceTransformerEmbedder):  # type: ignore[no-untyped-def]
    """One AppState per test session (the model loads once), as the ``api`` role; indices are
    wiped per test (by the fixtures' admin client)."""
    from pydantic import SecretStr

    from brain_search.api.app import build_state

    install_all(client, stack_settings)
    s = as_role(stack_settings.model_copy(update={"admin_key": SecretStr(ADMIN_KEY)}), "api")
    return build_state(s)


@pytest.fixture
def api(api_state, client: OpenSearch):  # type: ignore[no-untyped-def]
    """A TestClient over the real app and stack, on freshly wiped indices."""
    from fastapi.testclient import TestClient

    from brain_search.api.app import create_app
    from brain_search.ingest.modes import make_ingest_service

    s = api_state.settings
    api_state.feedback.recorder.flush()  # a recall of the last test is written before its index goes
    delete_indices(client, s)
    install_all(client, s, s.embedding_dimension)
    api_state.keys._cache.clear()
    api_state.ingest.close()
    api_state.ingest = make_ingest_service(s, api_state.client, api_state.embedder)  # a fresh queue per test
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
