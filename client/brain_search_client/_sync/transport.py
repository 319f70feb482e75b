# Generated from _async/transport.py by client/scripts/unasync.py: edit that file, then run the script.
"""One HTTP connection pool to the API, the key it sends, and the retries (``retry.py``)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import httpx

from brain_search_client._common import USER_AGENT
from brain_search_client.errors import ConnectionFailed, error_from
from brain_search_client.retry import RetryPolicy, parse_retry_after

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


def sleep(seconds: float) -> None:
    time.sleep(seconds)


class Transport:
    """Sends requests to ``base_url`` with ``key`` (``Authorization: Bearer``); an answer ≥ 400
    raises the typed error of ``errors.py`` once the retries are spent."""

    def __init__(
        self,
        base_url: str,
        *,
        key: str | None,
        timeout: float,
        retry: RetryPolicy,
        http_client: httpx.Client | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry
        self._own = http_client is None
        self.http = http_client or httpx.Client(timeout=timeout)
        self.headers = {"User-Agent": USER_AGENT, **(headers or {})}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self.retried = 0
        """retries made so far (all calls)"""

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        ok: tuple[int, ...] = (),
        timeout: float | None = None,
    ) -> httpx.Response:
        """One call, tried again as ``retry`` allows; ``ok``: error statuses returned, not raised."""
        method = method.upper()
        safe = method in SAFE_METHODS if idempotent is None else idempotent
        sent = {**self.headers, **(headers or {})}
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        attempt = 0
        while True:
            try:
                r = self.http.request(method, self.base_url + path, params=params, json=json, headers=sent, **extra)
            except httpx.TransportError as exc:
                wait = self.retry.after_error(exc, attempt, idempotent=safe)
                if wait is None:
                    raise ConnectionFailed(
                        f"{method} {path}: the API at {self.base_url} did not answer: {exc}"
                    ) from exc
            else:
                if r.status_code < 400 or r.status_code in ok:
                    return r
                after = parse_retry_after(r.headers.get("retry-after"))
                wait = self.retry.after_status(r.status_code, attempt, idempotent=safe, retry_after=after)
                if wait is None:
                    raise error_from(r, method, path)
            attempt += 1
            self.retried += 1
            sleep(wait)

    def close(self) -> None:
        if self._own:
            self.http.close()
