"""Erasing a tenant (admin): nothing of it is left in any index of the deployment.

Order matters: its keys and its tenant record go first (nothing new is accepted), then its task
records (a queued job whose record is gone is skipped by the workers: ``RecordMissing``), then
every document that carries its id in every index of the prefix (memories and their tombstones in
every memories index, the one kept for rollback after an encoder move and one a killed tenant move
left included; history, dead letters, nodes, node and forget tasks, recalls kept for feedback). A
task a worker was already running may still write after the first pass, so the erase runs a second
pass after the task time limit in the background; the answer counts the first pass.

Until that second pass has run, an erase marker stands in for the tenant's record: it holds the
id only (no ``tenant_id`` field, so it is no document *of* the tenant), and creating a tenant of
that id is refused with a 409 that says when it can be. A marker whose second pass is overdue
(the API that started it was killed or restarted) is finished by the sweep of any API process
(``api/unfinished.py``) or by whoever creates the id next. The second
pass runs only while its own marker stands, so it can never delete a later tenant of the same id.
"""

from __future__ import annotations

import logging
import secrets
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.store.indices import IndexNames
from brain_search.store.scope import tenant_documents
from brain_search.tenancy.auth import ERASING_FIELD, KeyStore, erase_marker_hit

log = logging.getLogger(__name__)


def tenant_query(tenant_id: str) -> dict[str, Any]:
    """Every document of the tenant, tombstones included (pure)."""
    return {"query": tenant_documents(tenant_id)}


def count_everywhere(client: OpenSearch, settings: Settings, tenant_id: str) -> dict[str, int]:
    """Documents of the tenant in each index of the prefix (after a refresh)."""
    names = IndexNames.of(settings)
    client.indices.refresh(index=names.everything)
    out = {}
    for index in client.indices.get(index=names.everything):
        out[index] = int(client.count(index=index, body=tenant_query(tenant_id))["count"])
    return out


def _pass(client: OpenSearch, settings: Settings, tenant_id: str) -> dict[str, int]:
    """Delete every document of the tenant in every index of the prefix that holds one: the
    serving indices, an earlier memories index kept for rollback, a tenant index a killed move
    left, history, dead letters, nodes, tasks, recalls kept for feedback. Returns deleted per index."""
    names = IndexNames.of(settings)
    client.indices.refresh(index=names.everything)  # a document written a moment ago is found too
    body = {**tenant_query(tenant_id), "size": 0, "aggs": {"at": {"terms": {"field": "_index", "size": 10_000}}}}
    found = client.search(index=names.everything, body=body)["aggregations"]["at"]["buckets"]
    deleted = {}
    for bucket in found:
        index = str(bucket["key"])
        r = client.delete_by_query(
            index=index, body=tenant_query(tenant_id), params={"refresh": "true", "conflicts": "proceed"}
        )
        deleted[index] = int(r.get("deleted", 0))
    return deleted


def erase_tenant(client: OpenSearch, settings: Settings, keys: KeyStore, tenant_id: str) -> dict[str, int]:
    """Erase ``tenant_id`` (NotFound if there is no such tenant); returns documents deleted per index."""
    names = IndexNames.of(settings)
    keys.get_tenant(tenant_id)
    wait_s = settings.celery_task_time_limit_s + 30
    erase_id = secrets.token_hex(8)
    marker = {
        ERASING_FIELD: tenant_id,
        "erase_id": erase_id,
        "second_pass_at": (datetime.now(UTC) + timedelta(seconds=wait_s)).isoformat(),
    }
    client.index(index=names.tenants, id=tenant_id, body=marker, params={"refresh": "true"})  # the record goes
    deleted = {names.tenants: 1, names.keys: keys.forget_tenant_keys(tenant_id)}
    for index, n in _pass(client, settings, tenant_id).items():
        deleted[index] = deleted.get(index, 0) + n

    def second_pass() -> None:
        try:
            finish_erase(client, settings, tenant_id, erase_id)
        except Exception:
            log.exception("erase %s: the second pass failed", tenant_id)

    timer = threading.Timer(wait_s, second_pass)
    timer.daemon = True
    timer.start()
    return deleted


def finish_erase(client: OpenSearch, settings: Settings, tenant_id: str, erase_id: str | None = None) -> bool:
    """The erase's second pass, then its marker goes. Runs only while the marker of ``erase_id``
    (any marker, when None) stands; returns whether it ran."""
    names = IndexNames.of(settings)
    r = erase_marker_hit(client, names.tenants, tenant_id)
    if r is None or (erase_id is not None and r["_source"].get("erase_id") != erase_id):
        return False
    left = _pass(client, settings, tenant_id)
    if any(left.values()):
        log.warning("erase %s: the second pass deleted %s", tenant_id, left)
    client.delete(
        index=names.tenants,
        id=tenant_id,
        params={"refresh": "true", "if_seq_no": r["_seq_no"], "if_primary_term": r["_primary_term"]},
        ignore=[404, 409],
    )
    return True
