# Generated from _async/admin.py by client/scripts/unasync.py: edit that file, then run the script.
"""``AdminClient``: tenants, their keys, limits, usage and the audit log (the admin key)."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from types import TracebackType
from typing import Any

import httpx

from brain_search_client._common import TenantPage, body, build, given, params, route, segment
from brain_search_client._sync.client import DEFAULT_URL, BrainClient
from brain_search_client._sync.transport import Transport
from brain_search_client.models.admin import (
    KeyIn,
    KeyInfo,
    KeyOut,
    RateLimitIn,
    RateLimitOut,
    RetentionIn,
    RetentionOut,
    TenantIn,
    TenantLanguages,
    TenantOut,
    TenantsCreated,
    TenantsIn,
    Usage,
)
from brain_search_client.retry import RetryPolicy

NEXT_AFTER = "X-Next-After"


class Tenants:
    """``admin.tenants``."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    @route("POST", "/v1/admin/tenants")
    def create(self, tenant_id: str, *, name: str | None = None) -> TenantOut:
        """Create a tenant (``Conflict`` when it exists, or is still being erased)."""
        new = build(TenantIn, given(tenant_id=tenant_id, name=name))
        r = self._t.request("POST", "/v1/admin/tenants", json=body(new))
        return TenantOut.model_validate(r.json())

    def ensure(self, tenant_id: str, *, name: str | None = None) -> bool:
        """Create the tenant unless it exists; True when it was created."""
        new = build(TenantIn, given(tenant_id=tenant_id, name=name))
        r = self._t.request("POST", "/v1/admin/tenants", json=body(new), ok=(409,))
        return r.status_code != 409

    @route("POST", "/v1/admin/tenants/bulk")
    def create_many(self, tenants: Iterable[str | TenantIn | Mapping[str, Any]]) -> TenantsCreated:
        """Create up to 1,000 tenants in one request (an existing id is listed, not an error)."""
        items = [{"tenant_id": t} if isinstance(t, str) else t for t in tenants]
        request = build(TenantsIn, {"tenants": items})
        r = self._t.request("POST", "/v1/admin/tenants/bulk", json=body(request), idempotent=True)
        return TenantsCreated.model_validate(r.json())

    @route("GET", "/v1/admin/tenants")
    def list(self, *, limit: int = 1000, after: str | None = None) -> TenantPage:
        r = self._t.request("GET", "/v1/admin/tenants", params=params(limit=limit, after=after))
        return TenantPage([TenantOut.model_validate(t) for t in r.json()], r.headers.get(NEXT_AFTER))

    def iter(self, *, page_size: int = 1000) -> Iterator[TenantOut]:
        """Every tenant, page after page."""
        after: str | None = None
        while True:
            page = self.list(limit=page_size, after=after)
            yield from page.tenants
            if not page.next_after:
                return
            after = page.next_after

    @route("DELETE", "/v1/admin/tenants/{tenant_id}")
    def erase(self, tenant_id: str) -> dict[str, int]:
        """Erase a tenant: keys, memories, nodes, tasks, recalls; documents deleted per index."""
        r = self._t.request("DELETE", f"/v1/admin/tenants/{segment(tenant_id)}")
        data: dict[str, int] = r.json()
        return data

    @route("GET", "/v1/admin/tenants/{tenant_id}/languages")
    def languages(self, tenant_id: str) -> TenantLanguages:
        """The tenant's encoder, the share of a sample of its memories in other languages, and
        the move that pays (``recommend``: a command, or None)."""
        r = self._t.request("GET", f"/v1/admin/tenants/{segment(tenant_id)}/languages")
        return TenantLanguages.model_validate(r.json())

    @route("PUT", "/v1/admin/tenants/{tenant_id}/rate-limit")
    def set_rate_limit(self, tenant_id: str, *, requests_per_s: float | None, burst: int | None) -> RateLimitOut:
        """The tenant's own budget per key (both None: the default; 0: no limit)."""
        limit = build(RateLimitIn, {"requests_per_s": requests_per_s, "burst": burst})
        r = self._t.request(
            "PUT", f"/v1/admin/tenants/{segment(tenant_id)}/rate-limit", json=limit.model_dump(mode="json")
        )
        return RateLimitOut.model_validate(r.json())

    @route("PUT", "/v1/admin/tenants/{tenant_id}/feedback-retention")
    def set_feedback_retention(self, tenant_id: str, *, retention_s: int | None) -> RetentionOut:
        """How long the tenant's recalls are kept for feedback (None: the default)."""
        retention = build(RetentionIn, {"retention_s": retention_s})
        r = self._t.request(
            "PUT",
            f"/v1/admin/tenants/{segment(tenant_id)}/feedback-retention",
            json=retention.model_dump(mode="json"),
        )
        return RetentionOut.model_validate(r.json())


class Keys:
    """``admin.keys``."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    @route("POST", "/v1/admin/tenants/{tenant_id}/keys")
    def create(
        self,
        tenant_id: str,
        *,
        label: str | None = None,
        user_id: str | None = None,
        read_only: bool = False,
        expires_at: datetime | str | None = None,
    ) -> KeyOut:
        """A key of the tenant (``user_id``: held to that user); its secret is shown once."""
        new = build(KeyIn, given(label=label, user_id=user_id, expires_at=expires_at) | {"read_only": read_only})
        r = self._t.request("POST", f"/v1/admin/tenants/{segment(tenant_id)}/keys", json=body(new))
        return KeyOut.model_validate(r.json())

    @route("GET", "/v1/admin/tenants/{tenant_id}/keys")
    def list(self, tenant_id: str, *, user_id: str | None = None) -> builtins.list[KeyInfo]:
        r = self._t.request("GET", f"/v1/admin/tenants/{segment(tenant_id)}/keys", params=params(user_id=user_id))
        return [KeyInfo.model_validate(k) for k in r.json()]

    @route("DELETE", "/v1/admin/keys/{key_id}")
    def revoke(self, key_id: str) -> None:
        self._t.request("DELETE", f"/v1/admin/keys/{segment(key_id)}")


class AdminClient:
    """The admin routes of the API at ``base_url`` with ``admin_key`` (``BRAIN_ADMIN_KEY``).
    Resources: ``tenants``, ``keys``; ``usage`` and ``audit`` are methods. The options are
    ``BrainClient``'s."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        admin_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 4,
        retry: RetryPolicy | None = None,
        http_client: httpx.Client | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._retry = retry or RetryPolicy(max_retries=max_retries)
        self._timeout = timeout
        self._http = http_client
        self._t = Transport(
            base_url, key=admin_key, timeout=timeout, retry=self._retry, http_client=http_client, headers=headers
        )
        self.tenants = Tenants(self._t)
        self.keys = Keys(self._t)

    @route("GET", "/v1/admin/usage")
    def usage(self, *, tenant: str | None = None, by_user: bool = False, days: int = 7, limit: int = 100) -> Usage:
        """Memories held, written within ``days`` and recalls made, per tenant (or per user of one)."""
        query = params(tenant=tenant, by_user=by_user or None, days=days, limit=limit)
        r = self._t.request("GET", "/v1/admin/usage", params=query)
        return Usage.model_validate(r.json())

    @route("GET", "/v1/admin/audit")
    def audit(self, *, tenant: str | None = None, limit: int = 100) -> builtins.list[dict[str, Any]]:
        """Changes to tenants and keys, newest first."""
        r = self._t.request("GET", "/v1/admin/audit", params=params(tenant=tenant, limit=limit))
        data: builtins.list[dict[str, Any]] = r.json()
        return data

    def tenant_client(self, tenant_id: str, *, label: str = "brain-search-client") -> BrainClient:
        """The tenant (created when missing) and a client holding a new key of it."""
        self.tenants.ensure(tenant_id)
        key = self.keys.create(tenant_id, label=label)
        return BrainClient(
            self._t.base_url, api_key=key.key, timeout=self._timeout, retry=self._retry, http_client=self._http
        )

    def close(self) -> None:
        self._t.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
