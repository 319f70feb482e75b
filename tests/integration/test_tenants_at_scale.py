"""Tenants at scale (issue 67, item 5): the tenant list pages with a cursor (every tenant listed,
however many), and the admin creates tenants in bulk (1,000 a request), through the API and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ADMIN_KEY

pytestmark = pytest.mark.integration
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
N = 2_345


def test_bulk_creation_and_a_list_that_pages_to_the_end(api, live_api, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ids = [f"org-{i:05d}" for i in range(N)]
    created = []
    for start in range(0, N, 1000):
        body = {"tenants": [{"tenant_id": t, "name": f"Org {t}"} for t in ids[start : start + 1000]]}
        r = api.post("/v1/admin/tenants/bulk", json=body, headers=ADMIN)
        assert r.status_code == 200, r.text
        assert r.json()["existing"] == [] and r.json()["erasing"] == []
        created += r.json()["created"]
    assert created == ids
    # again: nothing created, every id already a tenant; one new one among them is created
    r = api.post(
        "/v1/admin/tenants/bulk",
        json={"tenants": [{"tenant_id": "org-00001"}, {"tenant_id": "new-one"}]},
        headers=ADMIN,
    )
    assert r.json() == {"created": ["new-one"], "existing": ["org-00001"], "erasing": []}, r.text
    # refused before anything is written: a bad id (named), a duplicate, too many, no key
    r = api.post(
        "/v1/admin/tenants/bulk", json={"tenants": [{"tenant_id": "fine"}, {"tenant_id": "-bad"}]}, headers=ADMIN
    )
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "tenants", "1", "tenant_id"], r.text
    assert (
        api.get("/v1/admin/tenants", params={"after": "fine", "limit": 1}, headers=ADMIN).json()[0]["tenant_id"]
        != "fine"
    )
    r = api.post("/v1/admin/tenants/bulk", json={"tenants": [{"tenant_id": "a1"}, {"tenant_id": "a1"}]}, headers=ADMIN)
    assert r.status_code == 422, r.text
    r = api.post(
        "/v1/admin/tenants/bulk", json={"tenants": [{"tenant_id": f"x{i}"} for i in range(1001)]}, headers=ADMIN
    )
    assert r.status_code == 422, r.text
    assert api.post("/v1/admin/tenants/bulk", json={"tenants": [{"tenant_id": "z"}]}).status_code == 401
    # every tenant, page after page, in order, none twice
    listed: list[str] = []
    after = None
    pages = 0
    while True:
        params = {"limit": 1000, **({"after": after} if after else {})}
        r = api.get("/v1/admin/tenants", params=params, headers=ADMIN)
        assert r.status_code == 200, r.text
        listed += [t["tenant_id"] for t in r.json()]
        pages += 1
        after = r.headers.get("X-Next-After")
        if not after:
            break
    assert listed == sorted([*ids, "new-one"]) and pages == 3, (pages, len(listed))
    audit = api.get("/v1/admin/audit", params={"tenant": "org-00007"}, headers=ADMIN).json()
    assert [e["action"] for e in audit] == ["tenant.create"]
    # the CLI lists them all, and creates from a file
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BRAIN_API_URL": live_api, "BRAIN_ADMIN_KEY": ADMIN_KEY}
    out = subprocess.run(
        [sys.executable, "-m", "brain_search.commands.cli", "tenants", "list", "--limit", "700"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert [line.split()[0] for line in out.stdout.splitlines()] == listed
    more = tmp_path / "tenants.txt"
    more.write_text("cli-a\tCompany A\ncli-b\norg-00002\n")
    out = subprocess.run(
        [sys.executable, "-m", "brain_search.commands.cli", "tenants", "create-many", str(more)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and "2 created, 1 existing, 0 erasing" in out.stdout, out.stdout + out.stderr
    [first] = api.get("/v1/admin/tenants", params={"after": "cli-9", "limit": 1}, headers=ADMIN).json()
    assert (first["tenant_id"], first["name"]) == ("cli-a", "Company A")
