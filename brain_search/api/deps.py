"""`Annotated` dependency aliases for route signatures."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request
from opensearchpy import OpenSearch

from brain_search.api.state import AppState
from brain_search.auth import api_key_from_headers
from brain_search.config import Settings
from brain_search.errors import Unauthorized


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.brain
    return state


StateDep = Annotated[AppState, Depends(get_state)]


def get_settings(state: StateDep) -> Settings:
    return state.settings


def get_client(state: StateDep) -> OpenSearch:
    return state.client


SettingsDep = Annotated[Settings, Depends(get_settings)]
ClientDep = Annotated[OpenSearch, Depends(get_client)]


def get_tenant(
    state: StateDep,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> str:
    """The caller's tenant, from its API key (`Authorization: Bearer <key>` or `X-API-Key`)."""
    return state.keys.resolve(api_key_from_headers(authorization, x_api_key))


TenantDep = Annotated[str, Depends(get_tenant)]


def require_admin(
    state: StateDep,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> None:
    import hmac

    admin = state.settings.admin_key
    key = api_key_from_headers(authorization, x_api_key)
    if admin is None:
        raise Unauthorized("admin API disabled: set BRAIN_ADMIN_KEY")
    if not key or not hmac.compare_digest(key, admin.get_secret_value()):
        raise Unauthorized("admin key required")


AdminDep = Annotated[None, Depends(require_admin)]
