"""The dead-letter store: memories that could not be indexed, with the reason and the payload.

An OpenSearch index (``<prefix>-dead-letters``), not Redis, because it must work in embedded mode
(no Redis), it is durable with the data it belongs to, and it is read per tenant with filters and
paging. The cost: it is unavailable when OpenSearch is; a memory is only dead-lettered for a
permanent reason (OpenSearch answered) or after every retry, and a failed dead-letter write fails
the attempt: the task is retried when the failure is transient (``retry_policy``) rather than the
failure lost; a refusal (a 403, a 400) ends the task at once, its error naming the engine's answer.

Dead letters hold what people wrote, so they do not stay forever: they expire after
``dead_letter_ttl_s`` (purged at start by workers and the API), a tenant can purge its own
(``DELETE /v1/dead-letters``), and a DELETE of a memory removes its dead-letter copies too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.exceptions import TransportError

from brain_search.config import Settings
from brain_search.errors import StoreUnavailable
from brain_search.ingest.bulk import ItemOutcome, bulk_body, encode_entry
from brain_search.ingest.models import DeadLetter, DeadLetterPage, MemoryItem
from brain_search.ingest.retry_policy import error_fields
from brain_search.store.indices import IndexNames
from brain_search.store.scope import TENANT_FIELD, UserScope, owned


def dead_letter_id(tenant_id: str, task_id: str, memory_id: str) -> str:
    """Deterministic: a redelivered task overwrites its own dead letters."""
    return hashlib.sha256(f"{tenant_id}\x1f{task_id}\x1f{memory_id}".encode()).hexdigest()[:40]


class DeadLetterStore:
    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        self.index = IndexNames.of(settings).dead_letters

    def add(
        self,
        tenant_id: str,
        task_id: str,
        failures: Sequence[tuple[MemoryItem, ItemOutcome]],
        attempts: int,
    ) -> None:
        """Store the failures (searchable on return). Raises on any failure to store one."""
        if not failures:
            return
        now = datetime.now(UTC).isoformat()
        entries = []
        for item, outcome in failures:
            doc = {
                TENANT_FIELD: tenant_id,
                "task_id": task_id,
                "memory_id": item.memory_id,
                "reason": outcome.reason or "unknown",
                "status": outcome.status,
                "error_type": outcome.error_type,
                "attempts": attempts,
                "payload": item.model_dump(mode="json"),
                "created_at": now,
            }
            parent = (item.metadata or {}).get("chunk_of")
            if isinstance(parent, str):
                doc["chunk_of"] = parent
            for owner in ("user_id", "agent_id"):  # beside the payload: a user's reads and forget find it
                if getattr(item, owner) is not None:
                    doc[owner] = getattr(item, owner)
            action = {"index": {"_id": dead_letter_id(tenant_id, task_id, item.memory_id)}}
            entries.append(encode_entry(item.memory_id, action, doc))
        response = self.client.bulk(body=bulk_body(entries), index=self.index, params={"refresh": "wait_for"})
        if response.get("errors"):
            bad = [next(iter(i.values())) for i in response["items"]]
            bad = [b for b in bad if b.get("status", 500) >= 300]
            # raised from the engine's answer, so the retry policy sees its status (a 403 is no outage)
            status, error = int(bad[0].get("status", 500)), bad[0].get("error") or {}
            error_type, reason = error_fields(error)
            cause = TransportError(status, error_type or "dead_letter_refused", {"error": error})
            raise StoreUnavailable(
                f"{len(bad)} dead letters were not stored: {status} {error_type}: {reason}"
            ) from cause

    @staticmethod
    def _filters(
        tenant_id: str,
        *,
        task_id: str | None = None,
        memory_id: str | None = None,
        before: datetime | None = None,
        scope: UserScope | None = None,
    ) -> list[dict[str, Any]]:
        filters = owned(tenant_id, scope)
        if task_id:
            filters.append({"term": {"task_id": task_id}})
        if memory_id:  # the memory itself or a piece of it
            filters.append(
                {"bool": {"should": [{"term": {"memory_id": memory_id}}, {"term": {"chunk_of": memory_id}}]}}
            )
        if before is not None:
            filters.append({"range": {"created_at": {"lt": before.isoformat()}}})
        return filters

    def purge(
        self,
        tenant_id: str,
        *,
        task_id: str | None = None,
        memory_id: str | None = None,
        before: datetime | None = None,
        scope: UserScope | None = None,
    ) -> int:
        """Delete a tenant's dead letters (all, or those matching, of ``scope``'s own); returns how many."""
        own = scope.own() if scope is not None else None
        body = {
            "query": {
                "bool": {
                    "filter": self._filters(tenant_id, task_id=task_id, memory_id=memory_id, before=before, scope=own)
                }
            }
        }
        try:
            r = self.client.delete_by_query(
                index=self.index, body=body, params={"refresh": "true", "conflicts": "proceed"}
            )
        except (TransportError, OSError) as exc:
            raise StoreUnavailable(f"the dead letters were not purged: {exc}") from exc
        return int(r.get("deleted", 0))

    def purge_expired(self, ttl_s: float) -> None:
        """Delete every tenant's dead letters older than ``ttl_s``, in the background."""
        cutoff = (datetime.now(UTC) - timedelta(seconds=ttl_s)).isoformat()
        body = {"query": {"range": {"created_at": {"lt": cutoff}}}}
        with suppress(TransportError, OSError):  # the next start tries again
            self.client.delete_by_query(
                index=self.index, body=body, params={"wait_for_completion": "false", "conflicts": "proceed"}
            )

    def list(
        self,
        tenant_id: str,
        *,
        task_id: str | None = None,
        memory_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
        scope: UserScope | None = None,
    ) -> DeadLetterPage:
        """Newest first; only those ``scope`` holds."""
        filters = self._filters(tenant_id, task_id=task_id, memory_id=memory_id, scope=scope)
        body = {
            "query": {"bool": {"filter": filters}},
            "sort": [{"created_at": "desc"}, {"memory_id": "asc"}],
            "from": offset,
            "size": limit,
            "track_total_hits": True,
        }
        r = self.client.search(index=self.index, body=body)
        items = [
            DeadLetter(id=h["_id"], **{k: v for k, v in h["_source"].items() if k not in (TENANT_FIELD, "chunk_of")})
            for h in r["hits"]["hits"]
        ]
        return DeadLetterPage(total=r["hits"]["total"]["value"], items=items)
