"""Erasing a tenant (admin): nothing of it is left in any index of the deployment.

Order matters: its keys and its tenant record go first (nothing new is accepted), then its task
records (a queued job whose record is gone is skipped by the workers: ``RecordMissing``), then
every document that carries its id in every index of the prefix (memories, their tombstones,
history, dead letters, nodes, node and forget tasks). A task a worker was already running may
still write after the first pass, so the erase runs a second pass after the task time limit
(``second_pass_after_s``) in the background; the answer counts the first pass.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from opensearchpy import OpenSearch

from brain_search.auth import KeyStore
from brain_search.config import Settings
from brain_search.ingest.tombstones import TOMBSTONE_FIELD
from brain_search.store.indices import IndexNames

log = logging.getLogger(__name__)


def tenant_query(tenant_id: str) -> dict[str, Any]:
    """Every document of the tenant, tombstones included (pure)."""
    either = [{"term": {"tenant_id": tenant_id}}, {"term": {TOMBSTONE_FIELD: tenant_id}}]
    return {"query": {"bool": {"should": either, "minimum_should_match": 1}}}


def tenant_indices(names: IndexNames) -> list[str]:
    return [
        names.keys,
        names.ingest_tasks,
        names.memories_alias,
        names.memory_history,
        names.dead_letters,
        names.nodes,
        names.node_tasks,
    ]


def count_everywhere(client: OpenSearch, settings: Settings, tenant_id: str) -> dict[str, int]:
    """Documents of the tenant in each index of the prefix (after a refresh)."""
    names = IndexNames.of(settings)
    client.indices.refresh(index=names.everything)
    out = {}
    for index in client.indices.get(index=names.everything):
        out[index] = int(client.count(index=index, body=tenant_query(tenant_id))["count"])
    return out


def _pass(client: OpenSearch, names: IndexNames, tenant_id: str) -> dict[str, int]:
    deleted = {}
    for index in tenant_indices(names):
        r = client.delete_by_query(
            index=index, body=tenant_query(tenant_id), params={"refresh": "true", "conflicts": "proceed"}
        )
        deleted[index] = int(r.get("deleted", 0))
    return deleted


def erase_tenant(client: OpenSearch, settings: Settings, keys: KeyStore, tenant_id: str) -> dict[str, int]:
    """Erase ``tenant_id`` (NotFound if there is no such tenant); returns documents deleted per index."""
    names = IndexNames.of(settings)
    keys.get_tenant(tenant_id)
    deleted = {names.keys: keys.forget_tenant_keys(tenant_id)}
    client.delete(index=names.tenants, id=tenant_id, params={"refresh": "true"}, ignore=[404])
    deleted[names.tenants] = 1
    for index, n in _pass(client, names, tenant_id).items():
        deleted[index] = deleted.get(index, 0) + n

    def second_pass() -> None:
        try:
            left = _pass(client, names, tenant_id)
            if any(left.values()):
                log.warning("erase %s: the second pass deleted %s", tenant_id, left)
        except Exception:
            log.exception("erase %s: the second pass failed", tenant_id)

    timer = threading.Timer(settings.celery_task_time_limit_s + 30, second_pass)
    timer.daemon = True
    timer.start()
    return deleted
