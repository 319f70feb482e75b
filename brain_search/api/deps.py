"""`Annotated` dependency aliases for route signatures.

The accessors are ``async def`` on purpose: FastAPI runs a plain ``def`` dependency in its thread
pool, and a recall paid four thread hand-offs (state, tenant, retriever, the route) where one is
needed; each cost CPU and a GIL hand-off under load. Only work that may block (a key lookup that
misses the cache, the route itself) goes to a thread."""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import Depends, Header, Request

from brain_search.api.state import AppState
from brain_search.errors import NotFound, Unauthorized
from brain_search.tenancy.auth import api_key_from_headers, hash_key
from brain_search.tenancy.caller import Caller


async def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.brain
    return state


StateDep = Annotated[AppState, Depends(get_state)]


async def get_caller(
    state: StateDep,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> Caller:
    """The caller, from its API key (`Authorization: Bearer <key>` or `X-API-Key`): its tenant,
    and its user for a key held to one (``tenancy/caller.py``); from the key cache when it holds
    the key, else looked up in a worker thread."""
    key = api_key_from_headers(authorization, x_api_key)
    caller = state.keys.cached_caller(key)
    if caller is None:
        caller = await anyio.to_thread.run_sync(state.keys.resolve_caller, key)
    await check_rate_limit(state, caller.tenant_id, key)
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]


async def get_tenant(caller: CallerDep) -> str:
    """The caller's tenant (routes of the whole tenant's objects: tasks, nodes read)."""
    return caller.tenant_id


async def get_writer(caller: CallerDep) -> Caller:
    """A caller that may write (403 for a read-only key)."""
    return caller.writer()


async def get_organisation(caller: CallerDep) -> str:
    """The tenant of the organisation's writing key (403 for a key held to one user, or read-only):
    what reaches past one user (the knowledge graph's changes, keys of users)."""
    return caller.organisation("this route").tenant_id


WriterDep = Annotated[Caller, Depends(get_writer)]
OrganisationDep = Annotated[str, Depends(get_organisation)]


async def check_rate_limit(state: AppState, tenant: str, key: str | None) -> None:
    """One request of ``key`` against its bucket (``RateLimited``: a 429 with Retry-After)."""
    if state.limiter is None or key is None:
        return
    found, limit = state.keys.cached_rate_limit(tenant)
    if not found:
        limit = await anyio.to_thread.run_sync(state.keys.rate_limit, tenant)
    await state.limiter.check(hash_key(key), limit)


TenantDep = Annotated[str, Depends(get_tenant)]


async def require_admin(
    request: Request,
    state: StateDep,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> None:
    import hmac

    admin_port = state.settings.admin_port
    server = request.scope.get("server")
    if admin_port is not None and (not server or server[1] != admin_port):
        raise NotFound("route", f"{request.url.path} (the admin API has its own listener)")
    admin = state.settings.admin_key
    key = api_key_from_headers(authorization, x_api_key)
    if admin is None:
        raise Unauthorized("admin API disabled: set BRAIN_ADMIN_KEY")
    if not key or not hmac.compare_digest(key, admin.get_secret_value()):
        raise Unauthorized("admin key required")


AdminDep = Annotated[None, Depends(require_admin)]
