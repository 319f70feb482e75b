"""The dead-letter store: memories that could not be indexed, with the reason and the payload.

An OpenSearch index (``<prefix>-dead-letters``), not Redis, because it must work in embedded mode
(no Redis), it is durable with the data it belongs to, and it is read per tenant with filters and
paging. The cost: it is unavailable when OpenSearch is; a memory is only dead-lettered for a
permanent reason (OpenSearch answered) or after every retry, and a failed dead-letter write fails
the attempt, so the task is retried rather than the failure lost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.errors import StoreUnavailable
from brain_search.ingest.bulk import ItemOutcome, bulk_body, encode_entry
from brain_search.ingest.models import DeadLetter, DeadLetterPage, MemoryItem
from brain_search.store.indices import IndexNames


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
                "tenant_id": tenant_id,
                "task_id": task_id,
                "memory_id": item.memory_id,
                "reason": outcome.reason or "unknown",
                "status": outcome.status,
                "error_type": outcome.error_type,
                "attempts": attempts,
                "payload": item.model_dump(mode="json"),
                "created_at": now,
            }
            action = {"index": {"_index": self.index, "_id": dead_letter_id(tenant_id, task_id, item.memory_id)}}
            entries.append(encode_entry(item.memory_id, action, doc))
        response = self.client.bulk(body=bulk_body(entries), params={"refresh": "wait_for"})
        if response.get("errors"):
            bad = [next(iter(i.values())) for i in response["items"]]
            bad = [b for b in bad if b.get("status", 500) >= 300]
            raise StoreUnavailable(f"{len(bad)} dead letters were not stored: {bad[0].get('error')}")

    def list(
        self,
        tenant_id: str,
        task_id: str | None = None,
        memory_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> DeadLetterPage:
        """Newest first."""
        filters: list[dict[str, Any]] = [{"term": {"tenant_id": tenant_id}}]
        if task_id:
            filters.append({"term": {"task_id": task_id}})
        if memory_id:
            filters.append({"term": {"memory_id": memory_id}})
        body = {
            "query": {"bool": {"filter": filters}},
            "sort": [{"created_at": "desc"}, {"memory_id": "asc"}],
            "from": offset,
            "size": limit,
            "track_total_hits": True,
        }
        r = self.client.search(index=self.index, body=body)
        items = [
            DeadLetter(id=h["_id"], **{k: v for k, v in h["_source"].items() if k != "tenant_id"})
            for h in r["hits"]["hits"]
        ]
        return DeadLetterPage(total=r["hits"]["total"]["value"], items=items)
