"""GET /metrics on the real stack: what a scrape shows after a recall, a write and a refusal."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration


def _samples(api) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:  # type: ignore[no-untyped-def]
    r = api.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_after_a_recall_a_write_and_a_refusal(api, alice) -> None:
    api.app.state.brain.metrics.task_cache_s = 0.0  # read the task sums at every scrape here
    before = _samples(api)
    assert api.post("/v1/recall", json={"query": "equity split"}, headers=alice).status_code == 200
    r = api.post("/v1/memories", json={"content": "counted", "memory_id": "m-count", "refresh": True}, headers=alice)
    wait_task(api, alice, r.json()["task_id"])
    assert api.post("/v1/recall", json={"query": "x"}).status_code == 401  # no key: refused before routing
    after = _samples(api)

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert delta("brain_http_request_duration_seconds_count", method="POST", route="/v1/recall", status="200") == 1
    assert delta("brain_recall_stage_seconds_count", stage="search") == 1
    assert delta("brain_recall_stage_seconds_count", stage="total") == 1
    assert delta("brain_recall_engine_requests_total") >= 1  # the search; the tenant's counts first, maybe
    assert delta("brain_ingest_memories_total", event="accepted") == 1
    assert delta("brain_ingest_memories_total", event="indexed") == 1
    assert delta("brain_requests_refused_total", reason="no_key") == 1
    assert ("brain_ingest_queue_depth", ()) in after and ("brain_ingest_outbox", ()) in after
    assert after[("brain_ingest_task_memories", (("outcome", "indexed"),))] >= 1
    # route templates, never raw paths: one memory id does not make a series
    api.get("/v1/memories/m-count", headers=alice)
    names = {labels for (name, labels) in _samples(api) if name == "brain_http_request_duration_seconds_count"}
    assert any(("route", "/v1/memories/{memory_id:path}") in labels for labels in names)
    assert not any(("route", "/v1/memories/m-count") in labels for labels in names)
