"""Usage per tenant and per user (issue 67, item 7), from one admin route and the CLI: memories
held, written within the window and recalls made within it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ADMIN_KEY
from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def _write(api, headers, memories) -> None:  # type: ignore[no-untyped-def]
    r = api.post("/v1/memories", json={"memories": memories, "refresh": True}, headers=headers)
    assert r.status_code == 202, r.text
    wait_task(api, headers, r.json()["task_id"])


def test_usage_per_tenant_and_per_user(api, make_tenant, live_api, client) -> None:  # type: ignore[no-untyped-def]
    acme, other = make_tenant("acme"), make_tenant("other")
    _write(api, acme, [{"content": f"lena note {i}", "user_id": "lena"} for i in range(3)])
    _write(api, acme, [{"content": f"omar note {i}", "user_id": "omar"} for i in range(2)])
    _write(api, acme, [{"content": "the office is on Main Street"}])
    _write(api, other, [{"content": "another tenant's note"}])
    for body in ({"user_id": "lena"}, {"user_id": "lena"}, {"user_id": "omar"}, {}):
        assert api.post("/v1/recall", json={"query": "note", **body}, headers=acme).status_code == 200
    api.app.state.brain.feedback.recorder.flush()
    client.indices.refresh(index=api.app.state.brain.feedback.store.index)  # the records are searchable within 1 s

    rows = api.get("/v1/admin/usage", headers=ADMIN).json()["rows"]
    got = {r["tenant_id"]: (r["memories"], r["written"], r["recalls"]) for r in rows}
    assert got == {"acme": (6, 6, 4), "other": (1, 1, 0)}, rows
    rows = api.get("/v1/admin/usage", params={"tenant": "acme", "by_user": True}, headers=ADMIN).json()["rows"]
    got = {r["user_id"]: (r["memories"], r["written"], r["recalls"]) for r in rows}
    assert got == {"lena": (3, 3, 2), "omar": (2, 2, 1), None: (1, 1, 1)}, rows
    assert {r["tenant_id"] for r in rows} == {"acme"}
    # a forgotten user is gone from the figures; refusals name the field
    r = api.delete("/v1/users/omar", headers=acme)
    from tests.integration.test_forget import _wait_forget

    assert _wait_forget(api, acme, r.json()["task_id"])["state"] == "succeeded"
    rows = api.get("/v1/admin/usage", params={"tenant": "acme", "by_user": True}, headers=ADMIN).json()["rows"]
    assert "omar" not in {r["user_id"] for r in rows}, rows
    r = api.get("/v1/admin/usage", params={"by_user": True}, headers=ADMIN)
    assert r.status_code == 422 and "by_user" in r.text
    assert api.get("/v1/admin/usage", params={"tenant": "nobody"}, headers=ADMIN).status_code == 404
    assert api.get("/v1/admin/usage", headers=acme).status_code == 401  # the admin's, not a tenant's
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "BRAIN_API_URL": live_api,
        "BRAIN_ADMIN_KEY": ADMIN_KEY,
        "COLUMNS": "200",
    }
    out = subprocess.run(
        [sys.executable, "-m", "brain_search.commands.cli", "tenants", "usage", "acme", "--by-user"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[1:]}
    assert lines == {"lena": ["3", "3", "2"], "(shared)": ["1", "1", "1"]}, out.stdout
