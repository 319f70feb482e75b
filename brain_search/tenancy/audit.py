"""The audit log: every change to tenants and keys, one document each in ``<prefix>-audit``
(``at``, ``action``, ``tenant_id``, ``key_id``, ``actor``, ``detail``; never a key or its hash).

Actions: ``tenant.create``, ``tenant.rate_limit``, ``tenant.feedback_retention``, ``tenant.erase``,
``key.create``, ``key.revoke``, ``user.forget`` (a user of a tenant forgotten, named by hash only,
as a key's user is: ``detail.user_hash``). Erasing a tenant removes its entries with everything
else of it, and leaves one ``tenant.erase`` entry that names the tenant only by ``tenant_hash``
(SHA-256 of its id): a record that an erase happened, which whoever knows the id can find, holding
nothing of it.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC, datetime
from typing import Any, Literal

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.store.indices import IndexNames
from brain_search.store.scope import TENANT_FIELD

log = logging.getLogger(__name__)
Action = Literal[
    "tenant.create",
    "tenant.rate_limit",
    "tenant.feedback_retention",
    "tenant.erase",
    "key.create",
    "key.revoke",
    "user.forget",
]
"""what the audit log records"""


def tenant_hash(tenant_id: str) -> str:
    return hashlib.sha256(tenant_id.encode()).hexdigest()


class AuditLog:
    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        self.index = IndexNames.of(settings).audit

    def record(
        self,
        action: Action,
        tenant_id: str | None = None,
        key_id: str | None = None,
        detail: dict[str, Any] | None = None,
        *,
        actor: str = "admin",
        anonymous: bool = False,
    ) -> None:
        """One entry (``anonymous``: the tenant by its hash only, for the erase)."""
        doc: dict[str, Any] = {"at": datetime.now(UTC).isoformat(), "action": action, "actor": actor}
        if tenant_id is not None:
            doc["tenant_hash"] = tenant_hash(tenant_id)
            if not anonymous:
                doc[TENANT_FIELD] = tenant_id
        if key_id is not None:
            doc["key_id"] = key_id
        if detail:
            doc["detail"] = detail
        self.client.index(index=self.index, body=doc, params={"refresh": "true"})

    def record_many(self, action: Action, tenant_ids: list[str], detail: dict[str, Any] | None = None) -> None:
        """One entry per tenant (a bulk creation), in one request."""
        if not tenant_ids:
            return
        at = datetime.now(UTC).isoformat()
        lines: list[dict[str, Any]] = []
        for tenant_id in tenant_ids:
            doc: dict[str, Any] = {"at": at, "action": action, "actor": "admin", TENANT_FIELD: tenant_id}
            doc["tenant_hash"] = tenant_hash(tenant_id)
            if detail:
                doc["detail"] = detail
            lines += [{"index": {}}, doc]
        self.client.bulk(body=lines, index=self.index, params={"refresh": "true"})

    def entries(self, tenant_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Newest first; ``tenant_id`` matches its entries, the anonymous erase included."""
        query: dict[str, Any] = {"match_all": {}}
        if tenant_id is not None:
            query = {"term": {"tenant_hash": tenant_hash(tenant_id)}}
        body = {"size": limit, "query": query, "sort": [{"at": "desc"}]}
        r = self.client.search(index=self.index, body=body)
        return [h["_source"] for h in r["hits"]["hits"]]
