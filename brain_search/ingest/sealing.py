"""Queued jobs' payloads sealed at rest: what a task record keeps so that the reconciler can queue
a lost job again (``task_records.py``) is AES-256-GCM under a key derived from the job signing key
(``BRAIN_JOB_SIGNING_KEYS``), bound to the task id.

The worker's engine role may search the task records (the reconciler's pass) but must not read
memory text: with the payload sealed, what the engine hands it is ciphertext, and a payload
written into a record by anyone without the key (a plain one, or one sealed for another task)
does not open, so the reconciler cannot be made to queue a job the API never accepted. The first
key seals, any opens (rotation as for signatures). With no key set, payloads are kept plain, as
jobs are then unsigned (a warning at start says so).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SEALED = "sealed"
_CONTEXT = b"brain-search task payload v1"


def _aead(key: bytes) -> AESGCM:
    return AESGCM(hmac.new(key, _CONTEXT, hashlib.sha256).digest())


def seal(payload: dict[str, Any], task_id: str, keys: list[bytes]) -> dict[str, Any]:
    """``{"sealed": base64(nonce | ciphertext)}`` under the first key; ``payload`` itself without keys."""
    if not keys:
        return payload
    nonce = os.urandom(12)
    data = json.dumps(payload, ensure_ascii=True, separators=(",", ":")).encode()
    box = _aead(keys[0]).encrypt(nonce, data, task_id.encode())
    return {SEALED: base64.b64encode(nonce + box).decode()}


def unseal(stored: Any, task_id: str, keys: list[bytes]) -> dict[str, Any] | None:
    """The payload sealed for ``task_id``; None when it does not open under any key (forged,
    moved from another record, or plain while keys are set)."""
    if not keys:
        return stored if isinstance(stored, dict) and SEALED not in stored else None
    if not isinstance(stored, dict) or set(stored) != {SEALED} or not isinstance(stored[SEALED], str):
        return None
    try:
        raw = base64.b64decode(stored[SEALED], validate=True)
    except (binascii.Error, ValueError):
        return None
    for key in keys:
        try:
            data = _aead(key).decrypt(raw[:12], raw[12:], task_id.encode())
        except (InvalidTag, ValueError):
            continue
        value = json.loads(data)
        return value if isinstance(value, dict) else None
    return None
