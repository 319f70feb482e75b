"""Jobs the workers can trust: every ingest message carries an HMAC-SHA256 of its job under a key
the API and the workers hold and Redis does not (``BRAIN_JOB_SIGNING_KEYS``).

Whoever can write to Redis can put a message on the queue, but not one with a valid signature:
a worker refuses a job whose signature is missing or wrong (nothing is written, not even a dead
letter; it is counted, ``workers/spool.py``). Workers sign what they queue themselves (retries,
continuations, the reconciler's resubmissions, the spool's entries) with the same key.

Keys are a comma list: the first signs, any verifies, so a key is rotated by putting the new one
first, rolling API and workers, then dropping the old one. With no key set, jobs are neither
signed nor checked (a warning at start says so); the local stack, compose and the chart set one.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import orjson

from brain_search.config import Settings
from brain_search.ingest.models import IngestJob


def signing_keys(settings: Settings) -> list[bytes]:
    raw = settings.job_signing_keys.get_secret_value() if settings.job_signing_keys else ""
    return [k.strip().encode() for k in raw.split(",") if k.strip()]


def _canonical(payload: dict[str, Any]) -> bytes:
    return orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)


def signature(payload: dict[str, Any], key: bytes) -> str:
    """Hex HMAC-SHA256 of the job payload (its JSON with sorted keys) under ``key`` (pure)."""
    return hmac.new(key, _canonical(payload), hashlib.sha256).hexdigest()


def job_kwargs(job: IngestJob, keys: list[bytes]) -> dict[str, Any]:
    """The task's keyword arguments: the job, and its signature under the first key (if any)."""
    payload = job.model_dump(mode="json")
    kwargs: dict[str, Any] = {"job": payload}
    if keys:
        kwargs["sig"] = signature(payload, keys[0])
    return kwargs


def verified(payload: dict[str, Any], sig: str | None, keys: list[bytes]) -> bool:
    """Whether the payload was signed under one of ``keys`` (always, when no key is set)."""
    if not keys:
        return True
    if not sig:
        return False
    return any(hmac.compare_digest(signature(payload, k), sig) for k in keys)
