"""What ingestion retries, and how long it waits: the one place that decides.

Transient, so retried with capped exponential backoff and jitter: the engine answered 429 (too
many requests) or 5xx, or it did not answer at all (connection refused or reset, timeout).
Everything else is permanent, retrying cannot change the answer: 400 (a document the mapping
refuses), 401 / 403 (a role or a gateway that refuses the request, an index write block), 404,
409, and errors that are not the engine's. A permanent failure becomes a dead letter that records
its status, error type and reason, as opensearch-py's bulk helpers report a failed item.

Used per item of a bulk request (``bulk.py``, ``pipeline.py``) and for an attempt that failed as
a whole (``execute.retry_after_error``: in the workers and in-process).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import TransportError

from brain_search.errors import StoreUnavailable

REASON_CHARS = 500


def is_transient_status(status: int | None) -> bool:
    """429 or 5xx: the engine may take it a moment later."""
    return status is not None and (status == 429 or 500 <= status <= 599)


@dataclass(frozen=True)
class Verdict:
    """How a failure is treated: ``retriable``, and what a dead letter records of it."""

    retriable: bool
    status: int | None
    error_type: str
    reason: str


def error_fields(error: Any) -> tuple[str | None, str]:
    """(type, reason) of an engine error body (``{"type", "reason", "caused_by"}``) or of text."""
    if isinstance(error, dict):
        reason = str(error.get("reason") or error)
        caused = error.get("caused_by")
        if isinstance(caused, dict) and caused.get("reason"):
            reason = f"{reason}: {caused['reason']}"
        return error.get("type"), reason
    return None, str(error)


def _transport_verdict(exc: TransportError) -> Verdict:
    status = exc.status_code if isinstance(exc.status_code, int) else None
    info = exc.info.get("error") if isinstance(exc.info, dict) else None
    error_type, reason = error_fields(info if info is not None else exc.error)
    return Verdict(is_transient_status(status), status, error_type or type(exc).__name__, reason[:REASON_CHARS])


def classify(exc: BaseException) -> Verdict:
    """The verdict on a failed request or attempt.

    - opensearch-py's ``ConnectionError`` (``ConnectionTimeout`` included) and Python's own
      connection errors and timeouts: nothing was answered, transient;
    - any other ``TransportError``: by its HTTP status (429 / 5xx transient, the rest permanent);
    - ``StoreUnavailable``: by the engine error it was raised from, transient when it names none
      (the store did not answer);
    - anything else: permanent.
    """
    if isinstance(exc, OSConnectionError | ConnectionError | TimeoutError):
        return Verdict(True, None, type(exc).__name__, str(exc)[:REASON_CHARS])
    if isinstance(exc, TransportError):
        return _transport_verdict(exc)
    if isinstance(exc, StoreUnavailable):
        cause = exc.__cause__
        if isinstance(cause, Exception):
            inner = classify(cause)
            return Verdict(inner.retriable, inner.status, inner.error_type, str(exc)[:REASON_CHARS])
        return Verdict(True, None, type(exc).__name__, str(exc)[:REASON_CHARS])
    return Verdict(False, None, type(exc).__name__, str(exc)[:REASON_CHARS])


def transient(exc: BaseException) -> bool:
    return classify(exc).retriable


def backoff_delay(attempt: int, base_s: float, cap_s: float, u: float) -> float:
    """Capped exponential backoff with jitter: ``min(cap, base·2^attempt)`` scaled into its upper
    half by ``u`` in [0, 1) ("equal jitter": never zero, never in lockstep). Seconds."""
    ceiling = min(cap_s, base_s * (2 ** min(attempt, 30)))
    return ceiling * (0.5 + 0.5 * u)
