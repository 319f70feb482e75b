"""The reconciler: unfinished tasks whose message is no longer in Redis are queued again.

A message can vanish without a worker ever seeing it: Redis's AOF ``everysec`` window, a failover
to a replica that had not got it, a lost volume, a FLUSHALL. The task record in OpenSearch keeps
the job's payload until the job ends (``TaskRecords.create``), so the reconciler can tell (record
unfinished and older than a grace period, no message of that id queued or unacknowledged in
Redis) and re-queue the job under the same task id. Writes are versioned and idempotent, so a job
that did in fact run is only written again, never doubled or made to win over a newer write.

The Redis side is read only when there are candidates (unfinished records older than the grace),
so a healthy queue costs one small search per interval.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from brain_search_client.models.inputs import printable

from brain_search.ingest.models import IngestJob

log = logging.getLogger(__name__)
SCAN_CHUNK = 500


def message_task_id(raw: bytes | str) -> str | None:
    """The Celery task id of one kombu Redis message (a queued message, or the first element of
    an unacknowledged ``[message, exchange, routing_key]``)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, list) and value:
        value = value[0]
    if not isinstance(value, dict):
        return None
    headers = value.get("headers") or {}
    task_id = headers.get("id") or (value.get("properties") or {}).get("correlation_id")
    return task_id if isinstance(task_id, str) else None


def present_task_ids(redis: Any, queue_keys: Iterable[str], unacked_key: str) -> set[str]:
    """Every task id with a message in Redis: waiting in a queue or delivered and not yet acknowledged."""
    ids: set[str] = set()
    for key in queue_keys:
        start = 0
        while True:
            chunk = redis.lrange(key, start, start + SCAN_CHUNK - 1)
            ids |= {t for raw in chunk if (t := message_task_id(raw))}
            if len(chunk) < SCAN_CHUNK:
                break
            start += SCAN_CHUNK
    for raw in redis.hvals(unacked_key):
        if t := message_task_id(raw):
            ids.add(t)
    return ids


def unsendable(payload: dict[str, Any] | None) -> str | None:
    """Why a stored job payload can never be queued (missing or not opened with this deployment's
    keys; not a job; not encodable for its signature, e.g. a lone surrogate in a record written
    before the API refused those), or None (pure)."""
    if payload is None:
        return "its stored payload is missing or does not open with this deployment's job keys"
    try:
        orjson.dumps(IngestJob.model_validate(payload).model_dump(mode="json"))  # as signing encodes it
    except Exception as exc:  # ValidationError, orjson's JSONEncodeError, anything a payload can cause
        return f"{type(exc).__name__}: {printable(str(exc))[:200]}"
    return None


def lost_jobs(candidates: list[tuple[str, dict[str, Any] | None]], present: set[str]) -> list[IngestJob]:
    """The candidates (task id, payload) with no message in Redis (pure); a payload that is no
    sendable job is left out (``reconcile`` gives it up)."""
    return [
        IngestJob.model_validate(payload)
        for task_id, payload in candidates
        if task_id not in present and unsendable(payload) is None
    ]


def reconcile(
    candidates: Callable[[], list[tuple[str, dict[str, Any] | None]]],
    present: Callable[[], set[str]],
    requeue: Callable[[IngestJob], None],
    give_up: Callable[[str, str], None] = lambda task_id, reason: None,
) -> int:
    """One pass; returns how many jobs were queued again. Each job is handled on its own: one
    that can never be queued is given up (``give_up(task_id, reason)``: its record ends
    ``failed``) and the others are queued all the same."""
    found = candidates()
    if not found:
        return 0
    ids = present()
    queued = 0
    for task_id, payload in found:
        if task_id in ids:
            continue
        reason = unsendable(payload)
        if reason is not None:
            log.error("task %s: its stored job cannot be queued (%s); given up", task_id, reason)
            try:
                give_up(task_id, f"not queued: {reason}")
            except Exception as exc:  # the next pass tries again; the others go on
                log.warning("task %s: not marked failed (%s)", task_id, exc)
            continue
        job = IngestJob.model_validate(payload)
        log.warning("task %s: unfinished and its message is gone from Redis; queued again", job.task_id)
        requeue(job)  # raises when the queue or the engine is down: the pass ends, the next one retries
        queued += 1
    return queued
