"""Issue 55 item 6: the CLI never reads another tenant silently. A key means the API (its default
URL when none is given), as `remember` does; in-process only with `--in-process --tenant T`,
and then the output names the tenant."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from brain_search.commands import common
from brain_search.commands.cli import app
from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration


def _remember(api: Any, headers: dict[str, str], content: str, memory_id: str) -> None:
    r = api.post("/v1/memories", json={"content": content, "memory_id": memory_id, "refresh": True}, headers=headers)
    assert r.status_code == 202, r.text
    assert wait_task(api, headers, r.json()["task_id"])["state"] == "succeeded"


def test_a_key_without_an_url_recalls_its_own_tenant(live_api, api, make_tenant, stack_settings, monkeypatch) -> None:
    alice = make_tenant("alice")
    demo = make_tenant("demo")
    _remember(api, alice, "Alice keeps the spare keys under the blue planter by the door.", "alice-keys")
    _remember(api, demo, "The demo tenant keeps its spare keys in the kitchen drawer.", "demo-keys")
    monkeypatch.setattr(common, "DEFAULT_URL", live_api)  # the default URL, served by the test's API
    env = {
        "HF_HUB_OFFLINE": "1",
        "BRAIN_INDEX_PREFIX": stack_settings.index_prefix,
        "BRAIN_OPENSEARCH_URL": stack_settings.opensearch_url,
        "BRAIN_CACHE_DIR": str(stack_settings.cache_dir),
        "BRAIN_API_URL": None,
        "BRAIN_TENANT": None,
        "COLUMNS": "200",
    }
    runner = CliRunner()
    key = {**env, "BRAIN_API_KEY": alice["Authorization"].split()[1]}

    # remember-then-recall with the key set: both go through the API, as alice (`remember`'s
    # default URL is fixed when the command is defined: here it is named)
    remember = ["remember", "Alice parks the bike behind the bakery.", "--id", "alice-bike", "--api-url", live_api]
    out = runner.invoke(app, remember, env=key)
    assert out.exit_code == 0, out.output
    out = runner.invoke(app, ["recall", "where are the spare keys", "--json"], env=key)
    assert out.exit_code == 0, out.output
    ids = [r["id"] for r in json.loads(out.output)["results"]]
    assert ids and ids[0] == "alice-keys" and "demo-keys" not in ids, ids
    out = runner.invoke(app, ["recall", "where does Alice park the bike"], env=key)
    assert out.exit_code == 0 and "alice-bike" in out.output and "demo-keys" not in out.output, out.output

    # no key, no flag: refused, saying how to choose
    out = runner.invoke(app, ["recall", "spare keys"], env=env)
    assert out.exit_code == 2 and "--api-key" in out.output and "--in-process" in out.output, out.output
    # --tenant alone does not pick a tenant over the API
    out = runner.invoke(app, ["recall", "spare keys", "--tenant", "demo"], env=key)
    assert out.exit_code == 2 and "--in-process" in out.output, out.output
    out = runner.invoke(app, ["recall", "spare keys", "--in-process"], env=env)
    assert out.exit_code == 2 and "--tenant" in out.output, out.output

    # in-process by the flag: the tenant asked for, named in the output
    out = runner.invoke(app, ["recall", "where are the spare keys", "--in-process", "--tenant", "demo"], env=env)
    assert out.exit_code == 0, out.output
    assert "tenant demo" in out.output.splitlines()[0] and "demo-keys" in out.output, out.output
    assert "alice-keys" not in out.output, out.output
