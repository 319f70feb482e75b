"""Fixtures the integration tests share (the stack fixtures are in tests/conftest.py)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.store.indices import install_all
from brain_search.store.templates import delete_indices
from tests.integration.ingest_support import WorkerProcess, worker_env
from tests.integration.recall_corpus import index_corpus


@pytest.fixture
def alice(api, make_tenant, client):  # type: ignore[no-untyped-def]
    """Tenant ``alice`` with the small recall corpus indexed; returns her key's headers."""
    headers = make_tenant("alice")
    index_corpus(api.app.state.brain, client, "alice")
    return headers


# Short enough for a test to see a crashed worker's task come back; the invariant the app checks
# (visibility > time limit + longest retry countdown) still holds.
FAST_REDELIVERY = {
    "celery_task_time_limit_s": 40,
    "ingest_task_retry_cap_s": 2,
    "ingest_task_retry_base_s": 0.5,
    "celery_visibility_timeout_s": 45,
    "celery_unacked_restore_interval_s": 2,
}


@pytest.fixture
def wsettings(request, stack_settings: Settings, redis_url: str, client: OpenSearch) -> Iterator[Settings]:
    """Settings of this test's worker deployment (own index prefix → own queue)."""
    prefix = f"{stack_settings.index_prefix}-w{zlib.crc32(request.node.name.encode()) % 10_000}"
    s = stack_settings.model_copy(update={"index_prefix": prefix, "redis_url": redis_url, **FAST_REDELIVERY})
    delete_indices(client, s)
    install_all(client, s)
    yield s
    delete_indices(client, s)
    import redis

    r = redis.Redis.from_url(redis_url)
    keys = list(r.scan_iter(f"{prefix}:*"))
    if keys:
        r.delete(*keys)
    r.close()


@pytest.fixture
def workers(wsettings: Settings, as_role, tmp_path: Path) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """start(name, **setting overrides) → a running WorkerProcess (the ``worker`` role in a secured
    run); all are stopped at the end."""
    started: list[WorkerProcess] = []

    def start(name: str, **overrides: object) -> WorkerProcess:
        w = WorkerProcess(worker_env(as_role(wsettings, "worker"), **overrides), tmp_path / f"{name}.log", name)
        started.append(w)
        return w.start()

    yield start
    for w in started:
        w.stop()


@pytest.fixture
def queue(wsettings: Settings, as_role) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """The API's side of worker mode (the ``api`` role in a secured run)."""
    from brain_search.ingest.broker import CeleryQueue
    from brain_search.store.client import make_client

    s = as_role(wsettings, "api")
    q = CeleryQueue(s, make_client(s))
    yield q
    q.close()


@pytest.fixture
def worker_api(api_state, wsettings: Settings, client: OpenSearch, as_role) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """The API in worker mode (Redis), sharing the session's model; fresh indices (the ``api``
    role in a secured run)."""
    from fastapi.testclient import TestClient

    from brain_search.api.app import build_state, create_app
    from brain_search.graph.store import GraphStore
    from brain_search.ingest.modes import make_ingest_service
    from brain_search.retrieval.pipeline import Retriever
    from brain_search.store.client import make_client
    from brain_search.store.indices import install_all
    from brain_search.tenancy.auth import KeyStore

    install_all(client, wsettings)
    s = as_role(wsettings.model_copy(update={"admin_key": api_state.settings.admin_key}), "api")
    api_client = make_client(s)
    graph = GraphStore(api_client, s)
    state = replace(
        api_state,
        settings=s,
        client=api_client,
        keys=KeyStore(api_client, s),
        graph=graph,
        retriever=Retriever(api_client, s, api_state.query_cache, graph),
        ingest=make_ingest_service(s, api_client, api_state.embedder),
    )
    assert build_state  # the real factory is covered elsewhere; here the state shares the session's model
    with TestClient(create_app(state=state)) as tc:
        yield tc
    state.ingest.close()
