"""API-key authentication as plain ASGI middleware, for apps outside FastAPI's dependencies: the
MCP server over HTTP mounts its app behind this so it uses the same keys as the HTTP API.

    app = KeyAuthMiddleware(mcp_http_app, keys=state.keys)
    ...
    tenant = current_tenant()    # inside a tool handler

A missing, unknown or revoked key gets 401 before the wrapped app runs. The key is never logged.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from brain_search.auth import KeyStore
from brain_search.errors import Unauthorized

_tenant: ContextVar[str | None] = ContextVar("brain_tenant", default=None)


def current_tenant() -> str:
    """The tenant of the request being served (set by KeyAuthMiddleware)."""
    tenant = _tenant.get()
    if tenant is None:
        raise Unauthorized("no authenticated tenant in this context")
    return tenant


class KeyAuthMiddleware:
    def __init__(self, app: ASGIApp, keys: KeyStore) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            # the key lookup is a blocking OpenSearch call (cached): keep it off the event loop
            tenant = await anyio.to_thread.run_sync(self.keys.resolve_headers, headers)
        except Unauthorized as exc:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
            else:
                await _reject(send, str(exc))
            return
        scope.setdefault("state", {})["tenant_id"] = tenant
        token = _tenant.set(tenant)
        try:
            await self.app(scope, receive, send)
        finally:
            _tenant.reset(token)


async def _reject(send: Send, reason: str) -> None:
    body = json.dumps({"detail": reason}).encode()
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})
