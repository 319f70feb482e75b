# Generated from _async/client.py by client/scripts/unasync.py: edit that file, then run the script.
"""``BrainClient``: a tenant's (or one user's) door to the API."""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Unpack

import httpx

from brain_search_client._common import build, route
from brain_search_client._sync.memories import DeadLetters, Memories, Tasks
from brain_search_client._sync.resources import Feedback, Nodes, Users
from brain_search_client._sync.transport import Transport
from brain_search_client.models.recall import RecallRequest, RecallResponse
from brain_search_client.retry import RetryPolicy
from brain_search_client.typed import RecallOptions

DEFAULT_URL = "http://127.0.0.1:8080"


class BrainClient:
    """The API at ``base_url`` as the tenant (or the user) of ``api_key``.

    ``timeout``: seconds per request; ``max_retries``: tries after the first on a 429, a 502, 503
    or 504, or a lost connection (``retry.py`` says which requests); ``retry``: the whole policy;
    ``http_client``: an ``httpx.Client`` of yours (its pool, proxies, transport), left open
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
        http_client: httpx.Client | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._t = Transport(
            base_url,
            key=api_key,
            timeout=timeout,
            retry=retry or RetryPolicy(max_retries=max_retries),
            http_client=http_client,
            headers=headers,
        )
        self.tasks = Tasks(self._t)
        self.memories = Memories(self._t, self.tasks)
        self.nodes = Nodes(self._t)
        self.feedback = Feedback(self._t)
        self.users = Users(self._t)
        self.dead_letters = DeadLetters(self._t)

    @property
    def base_url(self) -> str:
        return self._t.base_url

    @property
    def retried(self) -> int:
        """Retries this client has made (after 429s, 5xx, lost connections)."""
        return self._t.retried

    @route("POST", "/v1/recall")
    def recall(self, query: str | RecallRequest, **options: Unpack[RecallOptions]) -> RecallResponse:
        """Recall memories: ``query`` in natural language (quoted phrases match as phrases), with
        the options of ``RecallRequest`` (``focus``, ``z_value``, ``nodes``, ``limit``,
        ``tiered``, ``strict``, ``since`` / ``until``, ``user_id`` …); or a ``RecallRequest``."""
        if isinstance(query, RecallRequest):
            request = query.model_copy(update=dict(options)) if options else query
        else:
            request = build(RecallRequest, {"query": query, **options})
        r = self._t.request(
            "POST", "/v1/recall", json=request.model_dump(mode="json", exclude_none=True), idempotent=True
        )
        return RecallResponse.model_validate(r.json())

    @route("GET", "/healthz")
    def health(self) -> dict[str, Any]:
        """Liveness: the API process answers (no key needed)."""
        r = self._t.request("GET", "/healthz")
        data: dict[str, Any] = r.json()
        return data

    @route("GET", "/readyz")
    def ready(self) -> dict[str, Any]:
        """Readiness: ``status`` is ``ready`` when the engine (and the queue) answer; a 503 is
        returned as its body, not raised."""
        r = self._t.request("GET", "/readyz", ok=(503,))
        data: dict[str, Any] = r.json()
        return data

    def openapi(self) -> dict[str, Any]:
        """The API's OpenAPI document (its routes, their models)."""
        r = self._t.request("GET", "/openapi.json")
        data: dict[str, Any] = r.json()
        return data

    def close(self) -> None:
        self._t.close()

    def __enter__(self) -> BrainClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
