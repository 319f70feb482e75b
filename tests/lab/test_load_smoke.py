"""A few seconds of real load through the Locust file and the runner, so the load path cannot rot:
the service (uvicorn over the real stack) and the bare engine, asserting only zero errors."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from brain_lab.bench import load as lb
from brain_lab.bench.workload import Item, Workload

from tests.integration.recall_corpus import index_corpus

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def live_api(api, client):  # type: ignore[no-untyped-def]
    """The app served by a real uvicorn on a free port (the `api` fixture wiped the indices)."""
    import uvicorn

    from brain_search.api.app import create_app

    state = api.app.state.brain
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(state=state), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}", state
    server.should_exit = True
    thread.join(timeout=10)


def test_smoke_load_has_no_errors(live_api, client, tmp_path: Path) -> None:
    host, state = live_api
    index_corpus(state, client, "alice")
    state.keys.create_tenant("alice")
    _, key = state.keys.create_key("alice", "smoke")
    bodies = [
        {"query": 'Find where I said "53% for me"'},
        {"query": "The conversation about the CTO offer"},
        {"query": "What did we discuss about compensation?"},
        {"query": "Ideas related to building teams"},
        {"query": "equity split", "focus": "conceptual"},
        {"query": "salary band", "z_value": 0.2},
        {"query": "partnership", "tiered": True, "limit": 3},
        {"query": "equity", "nodes": ["aiConnected/Brain"]},
    ]
    kinds = ["auto", "auto", "auto", "auto", "focus", "z_value", "tiered", "nodes"]
    workload = Workload([Item("alice", k, None, b) for k, b in zip(kinds, bodies, strict=True)], {})
    retriever = state.retriever
    from brain_search.models import RecallRequest

    payloads = [retriever.plan_payload(retriever.plan("alice", RecallRequest(**b))) for b in bodies]
    wl_file = tmp_path / "workload.json"
    lb.write_workload(wl_file, workload, {"alice": key}, payloads, state.settings.memories_alias)

    engine = lb.measure(lb.ENGINE, "EngineUser", state.settings.opensearch_url, wl_file, tmp_path, 2, 2, 3, 0)
    # the service paced at 20 req/s (Poisson arrivals), the engine closed-loop: both paths run
    service = lb.measure(lb.SERVICE, "RecallUser", host, wl_file, tmp_path, 2, 2, 3, 0, target_rps=20)
    for phase in (engine, service):
        assert phase.requests > 0, phase
        assert phase.failures == 0, phase.errors
    assert (tmp_path / "service_stats.csv").is_file() and (tmp_path / "service.html").is_file()
    assert len(lb.read_samples(tmp_path / "service")) == service.requests
    lb.plot_over_time({"engine": tmp_path / "engine", "service": tmp_path / "service"}, tmp_path / "t.png", "smoke")
    assert (tmp_path / "t.png").stat().st_size > 1000
