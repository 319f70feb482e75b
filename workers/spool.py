"""What a worker must record when OpenSearch cannot take it: the dead letters and the terminal
state of a task whose retries are spent while the engine is down. Spooled to a Redis list
(``<prefix>:brain:spool``) and drained into OpenSearch by the next task any worker runs once the
engine answers again, so exhausted retries always end in a terminal state and the memories'
payloads are kept.

The guarantee is Redis's: with AOF ``everysec`` a Redis crash can lose the last second of the
spool (docs/operations.md, fault table).

Redis is not trusted with what the spool writes: every entry carries an HMAC-SHA256 under the job
signing key (``BRAIN_JOB_SIGNING_KEYS``, as jobs do: ``ingest/signing.py``), so whoever can write
to Redis cannot put dead letters into a tenant nor end (and empty the payload of) a live task.
An entry whose signature is missing or wrong is dropped, logged and counted
(``<prefix>:brain:spool:refused``, ``Spool.refused``); nothing of it is written. With no key set,
entries are neither signed nor checked, as jobs. Forged jobs are counted here too
(``<prefix>:brain:forged-jobs``, ``Spool.forged_jobs``).

A signed entry is written only while its task's record is unfinished and of the entry's tenant:
the same entry pushed again after it was drained (a replay of a value once read from Redis), or
one for a task forgotten or erased since, writes no dead letter (no memory text comes back) and
is dropped.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Any

import redis

from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.models import MemoryItem
from brain_search.ingest.task_records import RecordMissing, TaskRecords
from brain_search.store.scope import TENANT_FIELD

log = logging.getLogger(__name__)
DRAIN_BATCH = 100


# what a spool signature covers besides the entry: no job signature can pass for one
_CONTEXT = b"brain-search spool entry v1\n"


def entry_signature(text: str, key: bytes) -> str:
    """Hex HMAC-SHA256 of one spool entry's JSON text under ``key`` (pure)."""
    return hmac.new(key, _CONTEXT + text.encode(), hashlib.sha256).hexdigest()


def seal_entry(entry: dict[str, Any], keys: list[bytes]) -> str:
    """The Redis value of ``entry``: its JSON text and, with keys, its signature under the first."""
    text = json.dumps(entry, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    value: dict[str, Any] = {"entry": text}
    if keys:
        value["sig"] = entry_signature(text, keys[0])
    return json.dumps(value)


def open_entry(raw: bytes | str, keys: list[bytes]) -> dict[str, Any] | None:
    """The entry of a spooled value; None when it is not one this deployment's workers wrote
    (unsigned, signed under no key of ``keys``, or not a spool entry at all)."""
    try:
        value = json.loads(raw)
        text, sig = value["entry"], value.get("sig")
        if keys and not (
            isinstance(sig, str) and any(hmac.compare_digest(entry_signature(text, k), sig) for k in keys)
        ):
            return None
        entry = json.loads(text)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return entry if isinstance(entry, dict) else None


class Spool:
    def __init__(self, redis_url: str, prefix: str, keys: list[bytes] | None = None) -> None:
        self.redis = redis.Redis.from_url(redis_url, socket_connect_timeout=5, socket_timeout=10)
        self.key = f"{prefix}:brain:spool"
        self.refused_key = f"{self.key}:refused"
        self.forged_key = f"{prefix}:brain:forged-jobs"  # jobs refused for their signature (workers/tasks.py)
        self.keys = keys or []

    def give_up(
        self, tenant_id: str, task_id: str, failures: list[tuple[MemoryItem, ItemOutcome]], attempts: int, *, error: str
    ) -> None:
        """Spool a task's end: its memories dead-lettered with the reason, its record failed."""
        entry = {
            TENANT_FIELD: tenant_id,
            "task_id": task_id,
            "attempts": attempts,
            "error": error,
            "failures": [
                {"item": item.model_dump(mode="json"), "reason": o.reason, "status": o.status, "type": o.error_type}
                for item, o in failures
            ],
        }
        self.redis.rpush(self.key, seal_entry(entry, self.keys))

    def __len__(self) -> int:
        return int(self.redis.llen(self.key))  # type: ignore[arg-type]

    @property
    def refused(self) -> int:
        """Entries refused so far (unsigned or forged), as counted in Redis."""
        return int(self.redis.get(self.refused_key) or 0)  # type: ignore[arg-type]

    @property
    def forged_jobs(self) -> int:
        """Jobs refused so far for a missing or wrong signature, as counted in Redis."""
        return int(self.redis.get(self.forged_key) or 0)  # type: ignore[arg-type]

    def count_forged_job(self) -> None:
        self.redis.incr(self.forged_key)

    def _drop(self, raw: Any) -> None:
        self.redis.lrem(self.key, 1, raw)

    def _refuse(self, raw: Any) -> None:
        self.redis.lrem(self.key, 1, raw)  # that value, whichever worker got to the head first
        self.redis.incr(self.refused_key)
        log.error("spool: an entry without a valid signature was dropped (not written by a worker): %.200r", raw)

    def drain(self, dead_letters: DeadLetterStore, records: TaskRecords) -> int:
        """Write what is spooled (oldest first) until it is empty or OpenSearch refuses again;
        returns how many tasks were drained. An entry leaves the spool only once written."""
        drained = 0
        for _ in range(DRAIN_BATCH):
            raw = self.redis.lindex(self.key, 0)
            if raw is None:
                break
            entry = open_entry(raw, self.keys)  # type: ignore[arg-type]
            try:
                if entry is None:
                    raise ValueError("not signed by this deployment's key")
                failures = [
                    (
                        MemoryItem.model_validate(f["item"]),
                        ItemOutcome(f["item"]["memory_id"], False, False, f["status"], f["type"], f["reason"]),
                    )
                    for f in entry["failures"]
                ]
                tenant_id, task_id = str(entry[TENANT_FIELD]), str(entry["task_id"])
            except (ValueError, TypeError, KeyError):  # pydantic's ValidationError is a ValueError
                self._refuse(raw)
                continue
            try:
                if not records.unfinished(tenant_id, task_id):  # ended (a replayed entry), forgotten or erased
                    log.warning("spool: task %s has no unfinished record of its tenant; its entry is dropped", task_id)
                    self._drop(raw)
                    continue
                dead_letters.add(tenant_id, task_id, failures, entry.get("attempts") or 0)
                records.failed(task_id, str(entry.get("error")), failed=len(failures))
            except RecordMissing:
                pass  # a record that expired (or a tenant erased) is no reason to keep the entry
            except Exception as exc:
                log.warning("spool: %d entries wait for OpenSearch: %s", len(self), exc)
                break
            self.redis.lpop(self.key)
            drained += 1
        return drained
