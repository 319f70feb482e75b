"""`brain-search tenants ...` and `brain-search nodes ...` against a live API over HTTP."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from brain_search.commands.cli import app
from tests.conftest import ADMIN_KEY
from tests.seed import Mem, node_paths, seed_memories

pytestmark = pytest.mark.integration


def test_cli_tenants_and_nodes(live_api, api, client, embedder) -> None:
    runner = CliRunner()
    admin_env = {"BRAIN_API_URL": live_api, "BRAIN_ADMIN_KEY": ADMIN_KEY, "BRAIN_API_KEY": ""}

    def run(*args: str, env: dict[str, str], code: int = 0) -> str:
        r = runner.invoke(app, list(args), env=env)
        assert r.exit_code == code, (args, r.output)
        return r.output

    run("tenants", "create", "cli-co", env=admin_env)
    assert "already exists" in run("tenants", "create", "cli-co", env=admin_env, code=1)
    key = run("tenants", "key", "cli-co", "--label", "laptop", env=admin_env).strip().splitlines()[-1]
    assert key.startswith("bsk_")
    assert "laptop" in run("tenants", "keys", "cli-co", env=admin_env) and key not in run(
        "tenants", "keys", "cli-co", env=admin_env
    )
    later = run("tenants", "key", "cli-co", "--label", "ci", "--expires-at", "2099-01-01T00:00:00Z", env=admin_env)
    assert later.strip().splitlines()[-1].startswith("bsk_")
    assert "expires 2099-01-01" in run("tenants", "keys", "cli-co", env=admin_env)
    assert "2 requests/s, burst 4" in run(
        "tenants", "rate-limit", "cli-co", "--per-s", "2", "--burst", "4", env=admin_env
    )
    run("tenants", "rate-limit", "cli-co", env=admin_env)  # back to the default
    audit = run("tenants", "audit", "cli-co", env=admin_env)
    assert "tenant.create" in audit and audit.count("key.create") == 2 and audit.count("tenant.rate_limit") == 2
    env = {"BRAIN_API_URL": live_api, "BRAIN_API_KEY": key}

    run("nodes", "create", "aiConnected/Brain/Architecture", "-d", "how it is built", env=env)
    run("nodes", "create", "Research/Memory", env=env)
    listed = json.loads(run("nodes", "list", "--json", env=env))
    assert [n["label"] for n in listed["nodes"]] == [
        "Research",
        "Research/Memory",
        "aiConnected",
        "aiConnected/Brain",
        "aiConnected/Brain/Architecture",
    ]
    got = json.loads(run("nodes", "get", "aiConnected/Brain/Architecture", env=env))
    assert got["description"] == "how it is built"
    run("nodes", "relate", "aiConnected/Brain", "Research/Memory", env=env)
    nb = json.loads(run("nodes", "neighbors", "aiConnected/Brain", "--json", env=env))
    assert {(x["node"]["label"], x["relation"]) for x in nb["neighbors"]} == {
        ("aiConnected", "parent"),
        ("aiConnected/Brain/Architecture", "child"),
        ("Research/Memory", "related"),
    }
    run("nodes", "unrelate", "aiConnected/Brain", "Research/Memory", env=env)

    settings = api.app.state.brain.settings
    seed_memories(client, settings, embedder, [Mem("cli-co", "m1", "a note", "aiConnected/Brain/Architecture")])
    task = json.loads(run("nodes", "move", "aiConnected/Brain", "Products/Brain", "--json", env=env))
    assert task["state"] == "completed" and task["updated"] == 1
    assert node_paths(client, settings, "cli-co") == {"m1": "Products/Brain/Architecture"}

    assert "cascade" in run("nodes", "delete", "Products/Brain", env=env, code=1)
    task = json.loads(run("nodes", "delete", "Products/Brain", "--cascade", "--json", env=env))
    assert task["deleted"] == 1 and node_paths(client, settings, "cli-co") == {}
    assert "404" in run("nodes", "get", "Products/Brain", env=env, code=1)

    key_id = key.split("_")[1]
    run("tenants", "revoke", key_id, env=admin_env)
    assert "401" in run("nodes", "list", env=env, code=2)
    assert "no key" in run("nodes", "list", env={"BRAIN_API_URL": live_api, "BRAIN_API_KEY": ""}, code=2)
