"""Admin: tenants, keys, rate limits and the audit log (admin key from settings; no default)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from brain_search_client.models.admin import (
    KeyIn,
    KeyInfo,
    KeyOut,
    RateLimitIn,
    RateLimitOut,
    RetentionIn,
    RetentionOut,
    TenantIn,
    TenantOut,
    TenantsCreated,
    TenantsIn,
    Usage,
)
from fastapi import APIRouter, Query, Response, status

from brain_search.api.deps import AdminDep, StateDep
from brain_search.api.state import AppState
from brain_search.errors import InvalidInput
from brain_search.retrieval.languages import TenantLanguages, tenant_languages
from brain_search.tenancy.audit import tenant_hash
from brain_search.tenancy.auth import TenantErasing
from brain_search.tenancy.erase import erase_tenant, finish_erase
from brain_search.tenancy.usage import usage

router = APIRouter(prefix="/v1/admin", tags=["admin"])
NEXT_AFTER = "X-Next-After"


@router.post("/tenants", status_code=status.HTTP_201_CREATED)
def create_tenant(body: TenantIn, state: StateDep, _: AdminDep) -> TenantOut:
    """409 for an existing id, and for one still being erased (until its erase's second pass)."""
    try:
        created = TenantOut(**state.keys.create_tenant(body.tenant_id, body.name))
    except TenantErasing as erasing:
        if erasing.due > datetime.now(UTC):
            raise
        finish_erase(state.client, state.settings, body.tenant_id)  # overdue: its API was restarted
        created = TenantOut(**state.keys.create_tenant(body.tenant_id, body.name))
    state.audit.record("tenant.create", body.tenant_id, detail={"name": created.name})
    return created


@router.post("/tenants/bulk", status_code=status.HTTP_200_OK)
def create_tenants(body: TenantsIn, state: StateDep, _: AdminDep) -> TenantsCreated:
    """Create up to 1,000 tenants in one request (one engine round trip, and one for the audit):
    a 422 naming ``tenants.N.tenant_id`` creates none; an existing id is listed, not an error."""
    out = state.keys.create_tenants([(t.tenant_id, t.name) for t in body.tenants])
    state.audit.record_many("tenant.create", out["created"], detail={"bulk": True})
    return TenantsCreated(**out)


@router.get("/tenants")
def list_tenants(
    response: Response,
    state: StateDep,
    _: AdminDep,
    limit: int = Query(1000, ge=1, le=1000, description="tenants a page"),
    *,
    after: str | None = Query(None, max_length=64, description="the last tenant id of the previous page"),
) -> list[TenantOut]:
    """The tenants in id order, a page at a time: when the page is full, the ``X-Next-After``
    header holds the id to send as ``after`` for the next one (none: the last page)."""
    page = [TenantOut(**t) for t in state.keys.list_tenants(limit, after)]
    if len(page) == limit:
        response.headers[NEXT_AFTER] = page[-1].tenant_id
    return page


@router.delete("/tenants/{tenant_id}")
def erase(tenant_id: str, state: StateDep, _: AdminDep) -> dict[str, int]:
    """Erase a tenant: its keys, memories (with tombstones, history, dead letters), nodes and
    tasks, in every index; documents deleted per index. A second pass runs after the task limit."""
    deleted = erase_tenant(state.client, state.settings, state.keys, tenant_id)
    # its audit entries went with it; this one names it by hash only
    state.audit.record("tenant.erase", tenant_id, detail={"deleted": sum(deleted.values())}, anonymous=True)
    return deleted


@router.put("/tenants/{tenant_id}/rate-limit")
def set_rate_limit(tenant_id: str, body: RateLimitIn, state: StateDep, _: AdminDep) -> RateLimitOut:
    """The tenant's own per-key rate limit (every key of the tenant gets this budget)."""
    state.keys.set_rate_limit(tenant_id, body.requests_per_s, body.burst)
    state.audit.record("tenant.rate_limit", tenant_id, detail=body.model_dump())
    s = state.settings
    if body.requests_per_s is None or body.burst is None:
        return RateLimitOut(
            tenant_id=tenant_id, requests_per_s=s.rate_limit_per_s, burst=s.rate_limit_burst, default=True
        )
    return RateLimitOut(tenant_id=tenant_id, requests_per_s=body.requests_per_s, burst=body.burst, default=False)


@router.put("/tenants/{tenant_id}/feedback-retention")
def set_feedback_retention(tenant_id: str, body: RetentionIn, state: StateDep, _: AdminDep) -> RetentionOut:
    """The tenant's own retention of recalls kept for feedback (a recall already kept keeps its expiry)."""
    state.keys.get_tenant(tenant_id)
    retention = state.feedback.store.set_retention(tenant_id, body.retention_s)
    state.audit.record("tenant.feedback_retention", tenant_id, detail=body.model_dump())
    return RetentionOut(tenant_id=tenant_id, retention_s=retention, default=body.retention_s is None)


def mint_key(state: AppState, tenant_id: str, body: KeyIn, actor: str = "admin") -> KeyOut:
    """A new key of the tenant as ``body`` asks (the admin's route and the organisation's
    ``POST /v1/users/{user_id}/keys`` alike), recorded in the audit log (a user by its hash)."""
    key_id, key = state.keys.create_key(
        tenant_id, body.label, body.expires_at, user_id=body.user_id, read_only=body.read_only
    )
    expires = body.expires_at.isoformat() if body.expires_at else None
    detail: dict[str, Any] = {"label": body.label, "expires_at": expires}
    if body.user_id is not None:
        detail |= {"user_hash": tenant_hash(body.user_id), "read_only": body.read_only}
    state.audit.record("key.create", tenant_id, key_id, detail=detail, actor=actor)
    return KeyOut(
        key_id=key_id,
        tenant_id=tenant_id,
        key=key,
        expires_at=body.expires_at,
        user_id=body.user_id,
        read_only=body.read_only,
    )


@router.post("/tenants/{tenant_id}/keys", status_code=status.HTTP_201_CREATED)
def create_key(tenant_id: str, body: KeyIn, state: StateDep, _: AdminDep) -> KeyOut:
    """A key of the tenant: the organisation's (no ``user_id``), or one held to one of its users."""
    return mint_key(state, tenant_id, body)


@router.get("/tenants/{tenant_id}/keys")
def list_keys(tenant_id: str, state: StateDep, _: AdminDep, user_id: str | None = None) -> list[KeyInfo]:
    """The tenant's keys (``user_id``: those held to that user), without their secrets."""
    return [KeyInfo(**k) for k in state.keys.list_keys(tenant_id, user_id)]


@router.delete("/keys/{key_id}", status_code=status.HTTP_204_NO_CONTENT)
def revoke_key(key_id: str, state: StateDep, _: AdminDep) -> None:
    tenant = state.keys.revoke_key(key_id)
    state.audit.record("key.revoke", tenant, key_id)


@router.get("/tenants/{tenant_id}/languages")
def tenant_languages_report(tenant_id: str, state: StateDep, _: AdminDep) -> TenantLanguages:
    """The tenant's encoder, the share of a fixed sample of its memories that reads as another
    language than English, and the move that would pay (``recommend``: a command, or null)."""
    state.keys.get_tenant(tenant_id)  # 404 for an unknown tenant
    return tenant_languages(state.client, state.settings, tenant_id)


@router.get("/usage")
def usage_report(
    state: StateDep,
    _: AdminDep,
    tenant: str | None = Query(
        None, max_length=64, description="one tenant (default: every tenant, the largest first)"
    ),
    by_user: bool = Query(False, description="with tenant: a row per user (null: the shared memories)"),
    *,
    days: int = Query(7, ge=1, le=3650, description="the window of `written` and `recalls`"),
    limit: int = Query(100, ge=1, le=10_000, description="rows at most"),
) -> Usage:
    """Usage per tenant, or per user of one tenant: memories held now, those written within the
    window and still held, and recalls made within it (as kept for feedback)."""
    if by_user and tenant is None:
        raise InvalidInput("by_user", "give the tenant whose users to list (tenant=...)", where="query")
    if tenant is not None:
        state.keys.get_tenant(tenant)  # 404 for an unknown tenant
    return usage(state.client, state.settings, tenant_id=tenant, by_user=by_user, days=days, limit=limit)


@router.get("/audit")
def audit_log(
    state: StateDep, _: AdminDep, tenant: str | None = None, limit: int = Query(100, ge=1, le=1000)
) -> list[dict[str, Any]]:
    """Changes to tenants and keys, newest first (``tenant``: its entries, its erase included)."""
    return state.audit.entries(tenant, limit)
