"""The wire models of the admin routes (tenants, keys, limits, usage) and of an organisation's
keys for its users."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from brain_search_client.models.inputs import EngineTime
from brain_search_client.models.memory import OwnerId

MAX_BULK_TENANTS = 1000


class TenantIn(BaseModel):
    tenant_id: str = Field(..., min_length=1, max_length=64)
    name: str | None = None


class TenantOut(BaseModel):
    tenant_id: str
    name: str
    created_at: datetime


class TenantsIn(BaseModel):
    """Tenants to create at once (each as ``POST /v1/admin/tenants`` takes it)."""

    model_config = ConfigDict(extra="forbid")

    tenants: list[TenantIn] = Field(..., min_length=1, max_length=MAX_BULK_TENANTS)

    @model_validator(mode="after")
    def _distinct(self) -> TenantsIn:
        seen: dict[str, int] = {}
        for i, t in enumerate(self.tenants):
            if t.tenant_id in seen:
                raise ValueError(f"tenants.{i}.tenant_id {t.tenant_id!r} is also tenants.{seen[t.tenant_id]}")
            seen[t.tenant_id] = i
        return self


class TenantsCreated(BaseModel):
    created: list[str] = Field(..., description="the ids created, in the request's order")
    existing: list[str] = Field(..., description="ids that were already tenants (left as they were)")
    erasing: list[str] = Field(..., description="ids still being erased: create them one by one after the erase")


def _ahead(v: datetime | None) -> datetime | None:
    """An expiry: in the future (naive times are UTC)."""
    if v is None:
        return None
    v = v if v.tzinfo else v.replace(tzinfo=UTC)
    if v <= datetime.now(UTC):
        raise ValueError("expires_at must be in the future")
    return v


class KeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str | None = Field(None, max_length=200)
    expires_at: EngineTime | None = Field(None, description="from then on the key is a 401 (ISO 8601, ahead)")
    user_id: OwnerId | None = Field(
        None, description="hold the key to this user of the tenant: it reads and writes that user's memories only"
    )
    read_only: bool = Field(False, description="the key recalls and reads; every write and delete is a 403")

    _expires_ahead = field_validator("expires_at")(_ahead)


class UserKeyIn(BaseModel):
    """A key held to the user of the path (``POST /v1/users/{user_id}/keys``)."""

    model_config = ConfigDict(extra="forbid")

    label: str | None = Field(None, max_length=200)
    expires_at: EngineTime | None = Field(None, description="from then on the key is a 401 (ISO 8601, ahead)")
    read_only: bool = Field(False, description="the key recalls and reads; every write and delete is a 403")

    _expires_ahead = field_validator("expires_at")(_ahead)


class KeyOut(BaseModel):
    key_id: str
    tenant_id: str
    key: str = Field(..., description="shown once; only its hash is stored")
    expires_at: datetime | None = None
    user_id: str | None = Field(None, description="the user the key is held to (none: the organisation's key)")
    read_only: bool = False


class KeyInfo(BaseModel):
    key_id: str
    tenant_id: str
    label: str
    user_id: str | None = None
    read_only: bool = False
    revoked: bool
    created_at: datetime
    revoked_at: datetime | None = None
    expires_at: datetime | None = None


class RateLimitIn(BaseModel):
    """Both null: the settings' default (BRAIN_RATE_LIMIT_PER_S / _BURST); 0: no limit."""

    model_config = ConfigDict(extra="forbid")
    requests_per_s: float | None = Field(None, ge=0.0, le=1_000_000)
    burst: int | None = Field(None, ge=0, le=10_000_000)

    @model_validator(mode="after")
    def _both_or_neither(self) -> RateLimitIn:
        if (self.requests_per_s is None) != (self.burst is None):
            raise ValueError("give requests_per_s and burst together (both null: the default)")
        return self


class RateLimitOut(BaseModel):
    tenant_id: str
    requests_per_s: float
    burst: int
    default: bool


class RetentionIn(BaseModel):
    """How long the tenant's recalls and the feedback on them are kept; null: the default
    (BRAIN_FEEDBACK_RETENTION_S). Bounded by BRAIN_FEEDBACK_RETENTION_MAX_S."""

    model_config = ConfigDict(extra="forbid")
    retention_s: int | None = Field(..., ge=3600)


class RetentionOut(BaseModel):
    tenant_id: str
    retention_s: int
    default: bool


class UsageRow(BaseModel):
    tenant_id: str
    user_id: str | None = Field(None, description="with by_user: the user (null: the organisation's shared memories)")
    memories: int = Field(..., description="memories held now")
    written: int = Field(..., description="of those, stored within the window")
    recalls: int = Field(..., description="recalls made within the window (as kept for feedback)")


class Usage(BaseModel):
    days: int
    since: datetime
    rows: list[UsageRow] = Field(..., description="the largest first (by memories held, then recalls)")


class TenantLanguages(BaseModel):
    tenant_id: str
    encoder: str = Field(..., description="the encoder the tenant's index records")
    encoder_languages: str
    own_index: bool = Field(..., description="whether the tenant has an index of its own")
    sampled: int = Field(..., description="memories read (a fixed sample of at most 200)")
    other_language: int = Field(..., description="of those, how many read as another language than English")
    share: float = Field(..., description="other_language / sampled")
    recommend: str | None = Field(None, description="the command that moves the tenant, when a move pays")
    reason: str
