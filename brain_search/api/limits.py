"""Bounded cost before any route runs: a pure ASGI middleware that refuses, without reading the
body, a request body over the limit (413), a body of unknown length on the API's routes (411),
and a request to a tenant or admin route that carries no key at all (401)."""

from __future__ import annotations

import json
from typing import Any

Scope = dict[str, Any]
Receive = Any
Send = Any

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})
KEY_HEADERS = (b"authorization", b"x-api-key")


async def _answer(
    send: Send, status: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None, *, scope: Scope | None = None
) -> None:
    brain = getattr(getattr((scope or {}).get("app"), "state", None), "brain", None)
    if brain is not None:
        reason = {401: "no_key", 411: "no_length", 413: "body_too_large", 400: "bad_length"}.get(status, str(status))
        brain.metrics.refused.labels(reason).inc()
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RequestLimits:
    """Applies to ``/v1/`` routes; the page, health and MCP routes pass through (MCP checks its key
    per call, health has no body). The limit is the running app's ``api_max_body_bytes``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    @staticmethod
    def _limit(scope: Scope) -> int:
        state = getattr(scope.get("app"), "state", None)
        brain = getattr(state, "brain", None)
        return int(brain.settings.api_max_body_bytes) if brain is not None else 16 * 1024 * 1024

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if not any(headers.get(h) for h in KEY_HEADERS):
            await _answer(send, 401, "missing API key", [(b"www-authenticate", b"Bearer")], scope=scope)
            return
        if scope.get("method") in WRITE_METHODS:
            length = headers.get(b"content-length")
            if length is None:
                if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
                    await _answer(send, 411, "a request body needs a Content-Length", scope=scope)
                    return
            else:
                try:
                    n = int(length)
                except ValueError:
                    await _answer(send, 400, "Content-Length is not a number", scope=scope)
                    return
                limit = self._limit(scope)
                if n > limit:
                    await _answer(send, 413, f"request body over {limit} bytes", scope=scope)
                    return
        await self.app(scope, receive, send)
