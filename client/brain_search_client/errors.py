"""What a call raises: one class per kind of answer, all under ``BrainError``.

- ``ApiError``: the API answered with an error status (``status``, ``detail``, ``field``), one
  subclass per status a caller handles differently: ``InvalidRequest`` (422, and a request this
  client refused before sending it: ``field`` names the field), ``Unauthorized`` (401),
  ``Forbidden`` (403), ``NotFound`` (404), ``Conflict`` (409), ``PreconditionFailed`` (412, an
  ``If-Match`` that is no longer the stored version), ``RateLimited`` (429, once the retries are
  spent: ``retry_after``), ``ServerError`` (5xx; ``Unavailable`` for 503).
- ``ConnectionFailed``: no answer at all (refused, timed out), after the retries.
- ``WriteFailed``: a write waited for ended without storing its memories (``status``).
- ``WaitTimeout``: a wait ran out before the task ended (``status``: as it stood).
"""

from __future__ import annotations

from typing import Any

import httpx


class BrainError(Exception):
    """Anything this client raises."""


class ApiError(BrainError):
    """The API answered ``status`` (≥ 400). ``detail``: its message; ``field``: the request field
    it names (a 422, a 403 on a user's key), dotted (``memories.3.content``)."""

    def __init__(
        self,
        status: int | None,
        detail: str,
        *,
        field: str | None = None,
        method: str = "",
        path: str = "",
        body: Any = None,
        headers: httpx.Headers | None = None,
    ) -> None:
        where = f"{method} {path}: ".lstrip() if method else ""
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{where}{code}{detail}")
        self.status = status
        self.detail = detail
        self.field = field
        self.method = method
        self.path = path
        self.body = body
        self.headers = headers or httpx.Headers()


class InvalidRequest(ApiError):
    """422 (or refused before sending, ``status`` None): ``field`` names the first field at fault,
    ``errors`` lists each one (``{"field", "message"}``)."""

    def __init__(self, status: int | None, detail: str, *, errors: list[dict[str, str]] | None = None, **kw: Any):
        super().__init__(status, detail, **kw)
        self.errors = errors or []


class Unauthorized(ApiError):
    """401: a missing, unknown, revoked or expired key."""


class Forbidden(ApiError):
    """403: the key may not do this (read-only, held to another user)."""


class NotFound(ApiError):
    """404: no such memory, node, task or tenant for this key (another tenant's or user's too)."""


class Conflict(ApiError):
    """409: e.g. a tenant that exists, a memory id stored for another user, a node with children."""


class PreconditionFailed(ApiError):
    """412: the ``If-Match`` version is not the stored one (``etag``: the stored one)."""

    @property
    def etag(self) -> str | None:
        tag = self.headers.get("etag")
        return tag.strip('"') if tag else None


class UnsupportedMediaType(ApiError):
    """415: a body that was not sent as JSON (never from this client)."""


class RateLimited(ApiError):
    """429 after the retries: ``retry_after`` seconds to wait (from ``Retry-After``)."""

    @property
    def retry_after(self) -> float | None:
        from brain_search_client.retry import parse_retry_after

        return parse_retry_after(self.headers.get("retry-after"))


class ServerError(ApiError):
    """5xx after the retries."""


class Unavailable(ServerError):
    """503 after the retries: the engine or the queue did not answer, or shards were missing."""


class ConnectionFailed(BrainError):
    """The API did not answer at all (refused, reset, timed out), after the retries."""


class WriteFailed(BrainError):
    """A write waited for ended without storing its memories: ``status`` says why (``failures``,
    ``error``)."""

    def __init__(self, message: str, status: Any) -> None:
        super().__init__(message)
        self.status = status


class WaitTimeout(BrainError, TimeoutError):
    """A wait ran out before the task ended; ``status``: the task as it stood."""

    def __init__(self, message: str, status: Any) -> None:
        super().__init__(message)
        self.status = status


BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    415: UnsupportedMediaType,
    422: InvalidRequest,
    429: RateLimited,
    503: Unavailable,
}


def _loc(loc: list[Any]) -> str:
    """A FastAPI location as a field: ``["body", "memories", 3, "content"]`` → ``memories.3.content``,
    ``["query", "node"]`` → ``node``."""
    parts = [str(x) for x in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts)


def error_from(response: httpx.Response, method: str, path: str) -> ApiError:
    """The typed error of an answer ≥ 400: FastAPI's 422 list (each ``loc`` a field), a
    ``{"detail", "field"}`` body, or its text."""
    status = response.status_code
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    detail_raw = body.get("detail") if isinstance(body, dict) else None
    field = body.get("field") if isinstance(body, dict) and isinstance(body.get("field"), str) else None
    errors: list[dict[str, str]] = []
    if isinstance(detail_raw, list):
        for e in detail_raw:
            if isinstance(e, dict):
                errors.append({"field": _loc(list(e.get("loc", []))), "message": str(e.get("msg", ""))})
        detail = "; ".join(f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors)
        field = field or next((e["field"] for e in errors if e["field"]), None)
    elif detail_raw is not None:
        detail = str(detail_raw)
    else:
        detail = response.text[:300] or response.reason_phrase
    cls = BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    kw: dict[str, Any] = {"field": field, "method": method, "path": path, "body": body, "headers": response.headers}
    if cls is InvalidRequest:
        return InvalidRequest(status, detail, errors=errors, **kw)
    return cls(status, detail, **kw)
