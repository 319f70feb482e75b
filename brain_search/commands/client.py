"""The one HTTP client of the brain-search API: the CLI, the demo, the ingest runner and the lab's
benchmarks all talk to a running service through it.

Errors (documented here, raised everywhere):

- ``ApiError``: the service answered with a 4xx/5xx; ``status``, ``detail`` (the message) and
  ``field`` (the request field a 422 names, when it names one);
- ``ApiUnavailable``: no answer (connection refused, timeout), after the retries asked for.

With ``retries`` > 0, 502/503/504 answers and transport errors are retried with capped
exponential backoff (a service that is starting, an engine that is busy); nothing else is.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from brain_search.ingest.models import TaskStatus
from brain_search.models import RecallRequest, RecallResponse

RETRIED = frozenset({502, 503, 504})


class ApiError(Exception):
    """The API answered ``status`` (≥ 400). ``field``: the request field a 422 names."""

    def __init__(self, status: int, detail: str, field: str | None = None, method: str = "", path: str = "") -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {detail}".strip())
        self.status = status
        self.detail = detail
        self.field = field


class ApiUnavailable(Exception):
    """The API did not answer at all."""


def error_detail(r: httpx.Response) -> tuple[str, str | None]:
    """(message, field) of an error answer: FastAPI's 422 list (``loc`` → field), a ``detail``
    string, or the raw text."""
    try:
        d = r.json().get("detail")
    except (ValueError, AttributeError):
        return r.text[:300], None
    if isinstance(d, list) and d:
        parts = []
        field = None
        for e in d:
            loc = [str(x) for x in e.get("loc", [])[1:]]
            field = field or (".".join(loc) or None)
            parts.append(f"{'.'.join(loc)}: {e.get('msg')}" if loc else str(e.get("msg")))
        return "; ".join(parts), field
    return str(d), None


class BrainClient:
    """A typed client for one API base URL. ``api_key``: the tenant's key (tenant routes);
    ``admin_key``: for the admin routes. ``http``: an ``httpx.Client`` to use (tests)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        admin_key: str | None = None,
        timeout_s: float = 60.0,
        retries: int = 0,
        http: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.admin_key = admin_key
        self.retries = retries
        self.http = http or httpx.Client(base_url=self.base_url, timeout=timeout_s)

    def for_key(self, api_key: str) -> BrainClient:
        """The same connection, as another tenant."""
        return BrainClient(self.base_url, api_key, self.admin_key, retries=self.retries, http=self.http)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> BrainClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------ transport
    def _headers(self, admin: bool) -> dict[str, str]:
        key = self.admin_key if admin else self.api_key
        return {"Authorization": f"Bearer {key}"} if key else {}

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        admin: bool = False,
        ok: tuple[int, ...] = (),
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """One call; an answer ≥ 400 raises ``ApiError`` unless its status is in ``ok``."""
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                sent = {**self._headers(admin), **(headers or {})}
                r = self.http.request(method, path, json=json, params=params, headers=sent)
            except httpx.TransportError as exc:
                if last:
                    raise ApiUnavailable(f"the API at {self.base_url} did not answer: {exc}") from exc
            else:
                if r.status_code < 400 or r.status_code in ok:
                    return r
                if r.status_code not in RETRIED or last:
                    detail, field = error_detail(r)
                    raise ApiError(r.status_code, detail, field, method, path)
            time.sleep(min(8.0, 0.5 * 2**attempt))
        raise AssertionError("unreachable")

    def call(self, method: str, path: str, **kw: Any) -> Any:
        """``request`` and its JSON body (None when empty)."""
        r = self.request(method, path, **kw)
        return r.json() if r.content else None

    # ------------------------------------------------------------------------------ routes
    def recall(self, req: RecallRequest) -> RecallResponse:
        body = req.model_dump(mode="json", exclude_none=True)
        return RecallResponse.model_validate(self.call("POST", "/v1/recall", json=body))

    def add_memories(self, body: dict[str, Any]) -> str:
        """``POST /v1/memories``; returns the task id."""
        return str(self.call("POST", "/v1/memories", json=body)["task_id"])

    def task(self, task_id: str) -> TaskStatus:
        return TaskStatus.model_validate(self.call("GET", f"/v1/tasks/{task_id}"))

    def wait_task(self, task_id: str, timeout_s: float = 600.0, poll_s: float = 0.5) -> TaskStatus:
        """Poll a task until it ends (``succeeded`` or ``failed``); raises TimeoutError."""
        deadline = time.monotonic() + timeout_s
        while True:
            st = self.task(task_id)
            if st.state in ("succeeded", "failed"):
                return st
            if time.monotonic() > deadline:
                raise TimeoutError(f"task {task_id} still {st.state} after {timeout_s:.0f} s")
            time.sleep(poll_s)

    def ensure_tenant(self, tenant_id: str, name: str | None = None) -> bool:
        """Create the tenant (admin); False when it already existed."""
        body = {"tenant_id": tenant_id, **({"name": name} if name else {})}
        r = self.request("POST", "/v1/admin/tenants", json=body, admin=True, ok=(409,))
        return r.status_code != 409

    def create_key(self, tenant_id: str, label: str) -> str:
        """A new API key of ``tenant_id`` (admin)."""
        return str(self.call("POST", f"/v1/admin/tenants/{tenant_id}/keys", json={"label": label}, admin=True)["key"])

    def tenant_client(self, tenant_id: str, label: str) -> BrainClient:
        """The tenant (created if missing) and a client holding a fresh key of it."""
        self.ensure_tenant(tenant_id)
        return self.for_key(self.create_key(tenant_id, label))

    def routes(self) -> set[str]:
        """The paths the service's OpenAPI document lists."""
        return set(self.call("GET", "/openapi.json").get("paths", {}))


@contextmanager
def connect(base_url: str, **kw: Any) -> Iterator[BrainClient]:
    client = BrainClient(base_url, **kw)
    try:
        yield client
    finally:
        client.close()
