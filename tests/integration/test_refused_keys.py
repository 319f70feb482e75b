"""Issue 54 item 7: a revoked or expired API key is remembered as refused, like an unknown one:
50 requests with it cost the keys index one read, not 50 (on the real engine)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import ADMIN_KEY

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


class _CountingClient:
    """The real engine client, counting the GETs on the keys index."""

    def __init__(self, client: Any, keys_index: str) -> None:
        self._client = client
        self._keys_index = keys_index
        self.key_reads = 0

    def get(self, index: str, id: str, **kw: Any) -> Any:
        if index == self._keys_index:
            self.key_reads += 1
        return self._client.get(index=index, id=id, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _key(api: Any, tenant: str, **body: Any) -> tuple[str, str]:
    r = api.post(f"/v1/admin/tenants/{tenant}/keys", json={"label": "t", **body}, headers=ADMIN)
    assert r.status_code == 201, r.text
    return r.json()["key"], r.json()["key_id"]


def test_revoked_and_expired_keys_cost_one_engine_read(api, api_state, make_tenant, monkeypatch) -> None:
    make_tenant("acme")
    revoked, revoked_id = _key(api, "acme")
    soon = datetime.now(UTC) + timedelta(seconds=1.5)
    expiring, _ = _key(api, "acme", expires_at=soon.isoformat())
    assert api.get("/v1/nodes", headers={"Authorization": f"Bearer {revoked}"}).status_code == 200
    assert api.delete(f"/v1/admin/keys/{revoked_id}", headers=ADMIN).status_code in (200, 204)
    time.sleep(max(0.0, (soon - datetime.now(UTC)).total_seconds()) + 0.2)

    counting = _CountingClient(api_state.keys.client, api_state.keys.keys_index)
    monkeypatch.setattr(api_state.keys, "client", counting)
    for key, reason in ((revoked, "revoked API key"), (expiring, "expired API key")):
        before = counting.key_reads
        for _ in range(50):
            r = api.get("/v1/nodes", headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 401 and r.json()["detail"] == reason, r.text
        assert counting.key_reads - before <= 1, f"{reason}: {counting.key_reads - before} reads of the keys index"
