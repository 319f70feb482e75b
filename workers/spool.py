"""What a worker must record when OpenSearch cannot take it: the dead letters and the terminal
state of a task whose retries are spent while the engine is down. Spooled to a Redis list
(``<prefix>:brain:spool``) and drained into OpenSearch by the next task any worker runs once the
engine answers again, so exhausted retries always end in a terminal state and the memories'
payloads are kept.

The guarantee is Redis's: with AOF ``everysec`` a Redis crash can lose the last second of the
spool (docs/operations.md, fault table).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import redis

from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.models import MemoryItem
from brain_search.ingest.task_records import RecordMissing, TaskRecords

log = logging.getLogger(__name__)
DRAIN_BATCH = 100


class Spool:
    def __init__(self, redis_url: str, prefix: str) -> None:
        self.redis = redis.Redis.from_url(redis_url, socket_connect_timeout=5, socket_timeout=10)
        self.key = f"{prefix}:brain:spool"

    def give_up(
        self, tenant_id: str, task_id: str, failures: list[tuple[MemoryItem, ItemOutcome]], attempts: int, error: str
    ) -> None:
        """Spool a task's end: its memories dead-lettered with the reason, its record failed."""
        entry = {
            "tenant_id": tenant_id,
            "task_id": task_id,
            "attempts": attempts,
            "error": error,
            "failures": [
                {"item": item.model_dump(mode="json"), "reason": o.reason, "status": o.status, "type": o.error_type}
                for item, o in failures
            ],
        }
        self.redis.rpush(self.key, json.dumps(entry))

    def __len__(self) -> int:
        return int(self.redis.llen(self.key))  # type: ignore[arg-type]

    def drain(self, dead_letters: DeadLetterStore, records: TaskRecords) -> int:
        """Write what is spooled (oldest first) until it is empty or OpenSearch refuses again;
        returns how many tasks were drained. An entry leaves the spool only once written."""
        drained = 0
        while drained < DRAIN_BATCH:
            raw = self.redis.lindex(self.key, 0)
            if raw is None:
                break
            entry: dict[str, Any] = json.loads(raw)  # type: ignore[arg-type]
            failures = [
                (
                    MemoryItem.model_validate(f["item"]),
                    ItemOutcome(f["item"]["memory_id"], False, False, f["status"], f["type"], f["reason"]),
                )
                for f in entry["failures"]
            ]
            try:
                dead_letters.add(entry["tenant_id"], entry["task_id"], failures, entry["attempts"])
                records.failed(entry["task_id"], entry["error"], failed=len(failures))
            except RecordMissing:
                pass  # a record that expired (or a tenant erased) is no reason to keep the entry
            except Exception as exc:
                log.warning("spool: %d entries wait for OpenSearch: %s", len(self), exc)
                break
            self.redis.lpop(self.key)
            drained += 1
        return drained
