"""The metrics registry and the Grafana dashboard agree (no scrape: pure)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from brain_search.api.metrics import Metrics
from brain_search.models import Timings

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "brain-search.json"


def test_every_series_the_dashboard_queries_exists() -> None:
    m = Metrics()
    m.observe_recall(Timings(intent_ms=1, embed_ms=2, search_ms=3, rank_ms=4, total_ms=10, engine_requests=2))
    m.ingest_event("accepted", 2)
    m.engine_errors.labels("unavailable").inc()
    m.refused.labels("no_key").inc()
    m.http.labels("POST", "/v1/recall", "200").observe(0.01)
    text = m.exposition().decode()
    known = set(re.findall(r"^(brain_[a-z_]+)", text, re.M)) | {"brain_ingest_task_memories"}  # a scrape-time collector
    queried = set()
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            queried |= set(re.findall(r"brain_[a-z_]+", target["expr"]))
    assert queried and queried <= known, queried - known
    assert 'brain_recall_stage_seconds_count{stage="search"} 1.0' in text
    assert "brain_recall_engine_requests_total 2.0" in text
    assert 'brain_ingest_memories_total{event="accepted"} 2.0' in text


def test_two_apps_do_not_share_counters() -> None:
    a, b = Metrics(), Metrics()
    a.ingest_event("accepted", 5)
    assert 'brain_ingest_memories_total{event="accepted"}' not in b.exposition().decode()
