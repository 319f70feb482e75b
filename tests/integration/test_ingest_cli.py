"""`brain-search ingest`: through the API (the test app behind the real HTTP client code) and
in-process (the CLI itself, on OpenSearch alone)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain_search.commands.ingest_runner import ApiSubmitter, run_ingest
from brain_search.ingest.models import IngestOptions
from brain_search.ingest.sources import read_jsonl, read_locomo
from tests.conftest import ADMIN_KEY
from tests.integration.ingest_support import memory_ids
from tests.unit.test_ingest_sources import _tiny_locomo

pytestmark = pytest.mark.integration


def test_jsonl_through_the_api(api, make_tenant) -> None:
    headers = make_tenant("acme")
    key = headers["Authorization"].split()[1]
    lines = [json.dumps({"content": f"line memory {i}", "memory_id": f"j{i}"}) for i in range(30)]
    lines.insert(5, "{broken")
    submitter = ApiSubmitter("", key, None, http=api)
    seen: list[int] = []
    summary = run_ingest(
        read_jsonl(io.StringIO("\n".join(lines))),
        submitter,
        IngestOptions(refresh=True),
        batch_size=8,
        max_in_flight=2,
        on_progress=seen.append,
    )
    assert (summary.read, summary.indexed, summary.failed, summary.rejected) == (31, 30, 0, 1)
    assert sum(seen) == 31 and summary.failures[0][0] == "line 6" and summary.rate > 0
    state = api.app.state.brain
    assert sorted(memory_ids(state.client, state.settings, "acme")) == sorted(f"j{i}" for i in range(30))


def test_locomo_through_the_api_one_tenant_per_conversation(api, tmp_path: Path) -> None:
    submitter = ApiSubmitter("", None, ADMIN_KEY, http=api)
    options = IngestOptions(create_nodes=True, refresh=True)
    summary = run_ingest(read_locomo(_tiny_locomo(tmp_path / "l.json")), submitter, options)
    assert (summary.indexed, summary.failed, summary.rejected) == (6, 0, 0)
    state = api.app.state.brain
    for tenant in ("conv-1", "conv-2"):
        assert sorted(memory_ids(state.client, state.settings, tenant)) == ["D1:1", "D1:2", "D2:1"]
        assert state.graph.get(tenant, "conv-1/session_2" if tenant == "conv-1" else "conv-2/session_1")
    doc = state.client.search(
        index=state.settings.memories_alias, body={"query": {"term": {"memory_id": "D1:2"}}}, params={"size": 1}
    )["hits"]["hits"][0]["_source"]
    assert doc["node_path"].endswith("/session_1") and doc["timestamp"].startswith("2023-05-08T13:56")


def test_in_process_cli(api, monkeypatch, tmp_path: Path) -> None:
    """The CLI without an API: loads its own model and writes straight to OpenSearch."""
    from brain_search.commands.cli import app

    s = api.app.state.brain.settings
    monkeypatch.setenv("BRAIN_INDEX_PREFIX", s.index_prefix)
    monkeypatch.setenv("BRAIN_OPENSEARCH_URL", s.opensearch_url)
    monkeypatch.delenv("BRAIN_REDIS_URL", raising=False)
    monkeypatch.delenv("BRAIN_API_URL", raising=False)
    path = tmp_path / "m.jsonl"
    long_doc = " ".join(f"Sentence {i} of a long note." for i in range(120))
    path.write_text(
        "\n".join(
            [json.dumps({"content": f"cli memory {i}", "memory_id": f"c{i}"}) for i in range(10)]
            + [json.dumps({"content": long_doc, "memory_id": "long"})]
        )
    )
    r = CliRunner().invoke(app, ["ingest", str(path), "--tenant", "solo", "--chunk", "--refresh"])
    assert r.exit_code == 0, r.output
    ids = memory_ids(api.app.state.brain.client, s, "solo")
    assert {f"c{i}" for i in range(10)} <= set(ids) and "long#0" in ids and "long" not in ids
    assert api.app.state.brain.keys.get_tenant("solo")["tenant_id"] == "solo"
    # a bad line: reported, the rest still lands, exit code 1
    path.write_text('{"content": "fine", "memory_id": "ok"}\n{"content": ""}\n')
    r = CliRunner().invoke(app, ["ingest", str(path), "--tenant", "solo", "--refresh"])
    assert r.exit_code == 1 and "line 2" in r.output
    assert "ok" in memory_ids(api.app.state.brain.client, s, "solo")
    # a record naming an unknown node: the reason names the flag that creates it (issue 42 item 8)
    path.write_text('{"content": "in a node nobody made", "memory_id": "n1", "node_id": "Nowhere/Yet"}\n')
    r = CliRunner().invoke(app, ["ingest", str(path), "--tenant", "solo", "--refresh"], env={"COLUMNS": "200"})
    assert r.exit_code == 1 and "--create-nodes" in r.output and "create_nodes" not in r.output, r.output
    r = CliRunner().invoke(app, ["ingest", str(path), "--tenant", "solo", "--refresh", "--create-nodes"])
    assert r.exit_code == 0, r.output
