"""``AsyncBrainClient``: a tenant's (or one user's) door to the API."""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Unpack

import httpx

from brain_search_client._async.memories import AsyncDeadLetters, AsyncMemories, AsyncTasks
from brain_search_client._async.resources import AsyncFeedback, AsyncNodes, AsyncUsers
from brain_search_client._async.transport import AsyncTransport
from brain_search_client._common import build, route
from brain_search_client.models.recall import RecallRequest, RecallResponse
from brain_search_client.retry import RetryPolicy
from brain_search_client.typed import RecallOptions

DEFAULT_URL = "http://127.0.0.1:8080"


class AsyncBrainClient:
    """The API at ``base_url`` as the tenant (or the user) of ``api_key``.

    ``timeout``: seconds per request; ``max_retries``: tries after the first on a 429, a 502, 503
    or 504, or a lost connection (``retry.py`` says which requests); ``retry``: the whole policy;
    ``http_client``: an ``httpx.AsyncClient`` of yours (its pool, proxies, transport), left open
    by ``close``. Resources: ``memories``, ``tasks``, ``nodes``, ``feedback``, ``users``,
    ``dead_letters``; ``recall`` is a method of the client itself.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 4,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._t = AsyncTransport(
            base_url,
            key=api_key,
            timeout=timeout,
            retry=retry or RetryPolicy(max_retries=max_retries),
            http_client=http_client,
            headers=headers,
        )
        self.tasks = AsyncTasks(self._t)
        self.memories = AsyncMemories(self._t, self.tasks)
        self.nodes = AsyncNodes(self._t)
        self.feedback = AsyncFeedback(self._t)
        self.users = AsyncUsers(self._t)
        self.dead_letters = AsyncDeadLetters(self._t)

    @property
    def base_url(self) -> str:
        return self._t.base_url

    @property
    def retried(self) -> int:
        """Retries this client has made (after 429s, 5xx, lost connections)."""
        return self._t.retried

    @route("POST", "/v1/recall")
    async def recall(self, query: str | RecallRequest, **options: Unpack[RecallOptions]) -> RecallResponse:
        """Recall memories: ``query`` in natural language (quoted phrases match as phrases), with
        the options of ``RecallRequest`` (``focus``, ``z_value``, ``nodes``, ``limit``,
        ``tiered``, ``strict``, ``since`` / ``until``, ``user_id`` …); or a ``RecallRequest``."""
        if isinstance(query, RecallRequest):
            request = query.model_copy(update=dict(options)) if options else query
        else:
            request = build(RecallRequest, {"query": query, **options})
        r = await self._t.request(
            "POST", "/v1/recall", json=request.model_dump(mode="json", exclude_none=True), idempotent=True
        )
        return RecallResponse.model_validate(r.json())

    @route("GET", "/healthz")
    async def health(self) -> dict[str, Any]:
        """Liveness: the API process answers (no key needed)."""
        r = await self._t.request("GET", "/healthz")
        data: dict[str, Any] = r.json()
        return data

    @route("GET", "/readyz")
    async def ready(self) -> dict[str, Any]:
        """Readiness: ``status`` is ``ready`` when the engine (and the queue) answer; a 503 is
        returned as its body, not raised."""
        r = await self._t.request("GET", "/readyz", ok=(503,))
        data: dict[str, Any] = r.json()
        return data

    async def openapi(self) -> dict[str, Any]:
        """The API's OpenAPI document (its routes, their models)."""
        r = await self._t.request("GET", "/openapi.json")
        data: dict[str, Any] = r.json()
        return data

    async def close(self) -> None:
        await self._t.close()

    async def __aenter__(self) -> AsyncBrainClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
