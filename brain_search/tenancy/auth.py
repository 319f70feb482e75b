"""Tenants and API keys. A key maps to exactly one tenant, and a key minted for one user of the
tenant (``user_id``, optionally ``read_only``) to that user too (``tenancy/caller.py`` says what
such a key may do); keys are stored hashed (SHA-256 of a high-entropy random secret) and never
logged: nothing here puts a key (or its hash) into a log line or an error message. Every
request's tenant, and its user for a user's key, come from its key.

The HTTP API (``api/deps.py``) and the MCP server over HTTP (``api/app.py``) share these keys
through ``api_key_from_headers`` + ``KeyStore.resolve``. Over stdio the MCP server takes its tenant
from its settings instead.

A revoked key stops working at once in the process that revoked it and within ``cache_ttl_s``
(5 s) in every other process. An unknown key is remembered as unknown for ``unknown_ttl_s``
(300 s; keys are random, so one that was unknown cannot have been issued since): a client
retrying a bad key, or a flood of made-up ones, costs the engine one lookup per key, not one per
request. A revoked or expired key is remembered as refused the same way: neither can become valid
again (nothing un-revokes a key or moves its expiry), so caching the refusal delays nothing."""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from datetime import UTC, datetime
from typing import Any

from opensearchpy import ConflictError, NotFoundError, OpenSearch

from brain_search.config import Settings
from brain_search.errors import Conflict, InvalidInput, NotFound, StoreUnavailable, Unauthorized
from brain_search.lru import ByteLRU
from brain_search.store.cache_budget import cache_budgets
from brain_search.store.indices import IndexNames
from brain_search.store.scope import TENANT_FIELD, any_tenant, tenant_of, tenant_term
from brain_search.tenancy.caller import Caller
from brain_search.tenancy.ratelimit import Limit

TENANT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
KEY_CHARS = re.compile(r"[!-~]{1,256}")
KEY_PREFIX = "bsk_"
ERASING_FIELD = "erasing"  # a tenants-index doc with this field marks an erase still under way


class TenantErasing(Conflict):
    """The tenant id is being erased: a task that was running may still write until ``due``."""

    def __init__(self, tenant_id: str, due: datetime) -> None:
        super().__init__(
            f"tenant {tenant_id!r} is being erased; its id can be used again after {due.isoformat()}",
            tenant_id=tenant_id,
            due=due.isoformat(),
        )
        self.due = due


def erase_marker_hit(client: OpenSearch, tenants_index: str, tenant_id: str) -> dict[str, Any] | None:
    """The tenants-index hit (with ``_seq_no``) of the tenant's erase marker, or None."""
    r: dict[str, Any] = client.get(index=tenants_index, id=tenant_id, ignore=[404])
    src = r.get("_source") if r.get("found") else None
    return r if src and ERASING_FIELD in src else None


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_key_from_headers(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key of ``X-API-Key: <key>`` or ``Authorization: Bearer <key>`` (X-API-Key wins)."""
    key = None
    if x_api_key:
        key = x_api_key.strip()
    elif authorization and authorization.lower().startswith("bearer "):
        key = authorization[7:].strip()
    if key is not None and not KEY_CHARS.fullmatch(key):
        # printable ASCII without spaces, bounded: anything else is no key of ours (401, never a 500)
        raise Unauthorized("malformed API key")
    return key or None


def validate_tenant_id(tenant_id: str) -> str:
    if not TENANT_ID_RE.match(tenant_id):
        raise InvalidInput(TENANT_FIELD, "1–64 characters: letters, digits, '_', '.', '-' (not first)")
    return tenant_id


class KeyStore:
    """Tenants and keys in two small OpenSearch indices, with short in-process caches, each bounded
    by its share of ``cache_mib`` (``store/cache_budget.py``), the least recently used out first:

    - valid keys: the key's hash (64 hex characters) → its ``Caller`` (tenant, user, read-only) and
      until when (``cache_ttl_s``, never past the key's expiry); about 0.6 KB an entry;
    - refused keys: the hash → why (unknown, revoked, expired) and until when (``unknown_ttl_s``): a
      flood of random keys costs at most this cache's share, about 0.5 KB a key;
    - rate limits: tenant id → its own limit (or None: the default) and until when; about 0.4 KB.

    A miss costs one engine round trip: a GET of the key's or the tenant's document."""

    def __init__(
        self, client: OpenSearch, settings: Settings, cache_ttl_s: float = 5.0, unknown_ttl_s: float = 300.0
    ) -> None:
        self.client = client
        names = IndexNames.of(settings)
        self.tenants_index = names.tenants
        self.keys_index = names.keys
        self.cache_ttl_s = cache_ttl_s
        self.unknown_ttl_s = unknown_ttl_s
        budgets = cache_budgets(settings)
        self._cache: ByteLRU[str, tuple[Caller, float]] = ByteLRU(budgets.keys)
        self._refused: ByteLRU[str, tuple[str, float]] = ByteLRU(budgets.refused_keys)
        self._limits: ByteLRU[str, tuple[Limit | None, float]] = ByteLRU(budgets.rate_limits)
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- tenants
    def create_tenant(self, tenant_id: str, name: str | None = None) -> dict[str, Any]:
        validate_tenant_id(tenant_id)
        doc = {TENANT_FIELD: tenant_id, "name": name or tenant_id, "created_at": datetime.now(UTC).isoformat()}
        try:
            self.client.create(index=self.tenants_index, id=tenant_id, body=doc, params={"refresh": "true"})
        except ConflictError:
            marker = self.erase_marker(tenant_id)
            if marker is not None:
                raise TenantErasing(tenant_id, datetime.fromisoformat(marker["second_pass_at"])) from None
            raise Conflict(f"tenant {tenant_id!r} already exists") from None
        return doc

    def erase_marker(self, tenant_id: str) -> dict[str, Any] | None:
        """The erase marker that stands in for the tenant's record while its erase is under way."""
        found = erase_marker_hit(self.client, self.tenants_index, tenant_id)
        return found["_source"] if found else None

    def get_tenant(self, tenant_id: str) -> dict[str, Any]:
        try:
            src: dict[str, Any] = self.client.get(index=self.tenants_index, id=tenant_id)["_source"]
        except NotFoundError:
            raise NotFound("tenant", tenant_id) from None
        if ERASING_FIELD in src:
            raise NotFound("tenant", tenant_id)
        return src

    def list_tenants(self, limit: int = 1000, after: str | None = None) -> list[dict[str, Any]]:
        """A page of the tenants in id order: the first ``limit`` after the id ``after`` (the last
        of the previous page), so that every tenant is listed however many there are."""
        body: dict[str, Any] = {
            "size": limit,
            "query": any_tenant(),
            "sort": [{TENANT_FIELD: "asc"}],
        }
        if after is not None:
            body["search_after"] = [after]
        r = self.client.search(index=self.tenants_index, body=body)
        return [h["_source"] for h in r["hits"]["hits"]]

    def create_tenants(self, tenants: list[tuple[str, str | None]]) -> dict[str, list[str]]:
        """Create many tenants in one request (each ``(tenant_id, name)``, ids checked first:
        nothing is written when one is invalid). Returns the ids ``created``, those that already
        ``existing`` and those still being ``erasing`` (create those one by one, after the erase)."""
        for i, (tenant_id, _) in enumerate(tenants):
            try:
                validate_tenant_id(tenant_id)
            except InvalidInput as exc:
                raise InvalidInput(f"tenants.{i}.tenant_id", exc.reason) from None
        now = datetime.now(UTC).isoformat()
        lines: list[dict[str, Any]] = []
        for tenant_id, name in tenants:
            lines.append({"create": {"_id": tenant_id}})
            lines.append({TENANT_FIELD: tenant_id, "name": name or tenant_id, "created_at": now})
        r = self.client.bulk(body=lines, index=self.tenants_index, params={"refresh": "true"})
        out: dict[str, list[str]] = {"created": [], "existing": [], "erasing": []}
        taken = []
        for (tenant_id, _), item in zip(tenants, r["items"], strict=True):
            status = int(item["create"].get("status", 500))
            if status < 300:
                out["created"].append(tenant_id)
            elif status == 409:
                taken.append(tenant_id)
            else:
                raise StoreUnavailable(f"tenant {tenant_id!r} was not created: {item['create'].get('error')}")
        if taken:
            found = self.client.mget(index=self.tenants_index, body={"ids": taken})["docs"]
            for tenant_id, doc in zip(taken, found, strict=True):
                erasing = ERASING_FIELD in (doc.get("_source") or {})
                out["erasing" if erasing else "existing"].append(tenant_id)
        return out

    def set_rate_limit(self, tenant_id: str, requests_per_s: float | None, burst: int | None) -> None:
        """The tenant's own rate limit (both None: back to the settings' default)."""
        self.get_tenant(tenant_id)
        doc = {"rate_limit_per_s": requests_per_s, "rate_limit_burst": burst}
        self.client.update(index=self.tenants_index, id=tenant_id, body={"doc": doc}, params={"refresh": "true"})
        with self._lock:
            self._limits.pop(tenant_id)

    def cached_rate_limit(self, tenant_id: str) -> tuple[bool, Limit | None]:
        """(found, the tenant's own limit or None) from the cache, without the engine."""
        with self._lock:
            hit = self._limits.get(tenant_id)
        if hit is None or hit[1] <= time.monotonic():
            return False, None
        return True, hit[0]

    def rate_limit(self, tenant_id: str) -> Limit | None:
        """The tenant's own rate limit, or None for the default (cached ``cache_ttl_s``)."""
        found, limit = self.cached_rate_limit(tenant_id)
        if found:
            return limit
        r = self.client.get(index=self.tenants_index, id=tenant_id, ignore=[404])
        src = r.get("_source") or {}
        per_s, burst = src.get("rate_limit_per_s"), src.get("rate_limit_burst")
        limit = Limit(float(per_s), int(burst)) if per_s is not None and burst is not None else None
        with self._lock:
            self._limits.put(tenant_id, (limit, time.monotonic() + self.cache_ttl_s))
        return limit

    # ---------------------------------------------------------------- keys
    def create_key(
        self,
        tenant_id: str,
        label: str | None = None,
        expires_at: datetime | None = None,
        *,
        user_id: str | None = None,
        read_only: bool = False,
    ) -> tuple[str, str]:
        """Returns ``(key_id, key)``; the plain key is shown once and only its hash is stored.
        ``expires_at``: from then on the key is a 401 ("expired API key"). ``user_id``: the key is
        held to that user of the tenant; ``read_only``: it only reads."""
        self.get_tenant(tenant_id)
        key_id = secrets.token_hex(6)
        key = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        doc: dict[str, Any] = {
            "key_id": key_id,
            TENANT_FIELD: tenant_id,
            "label": label or "",
            "revoked": False,
            "created_at": datetime.now(UTC).isoformat(),
        }
        if user_id is not None:
            doc["user_id"] = user_id
        if read_only:
            doc["read_only"] = True
        if expires_at is not None:
            doc["expires_at"] = expires_at.astimezone(UTC).isoformat()
        self.client.index(index=self.keys_index, id=hash_key(key), body=doc, params={"refresh": "true"})
        return key_id, key

    def list_keys(self, tenant_id: str, user_id: str | None = None) -> list[dict[str, Any]]:
        """The tenant's keys (``user_id``: those held to that user) without their secrets: key_id,
        label, user_id, read_only, revoked, created_at, expires_at."""
        self.get_tenant(tenant_id)
        filters: list[dict[str, Any]] = [tenant_term(tenant_id)]
        if user_id is not None:
            filters.append({"term": {"user_id": user_id}})
        r = self.client.search(
            index=self.keys_index,
            body={"query": {"bool": {"filter": filters}}, "size": 1000, "sort": [{"created_at": "asc"}]},
        )
        return [h["_source"] for h in r["hits"]["hits"]]

    def forget_tenant_keys(self, tenant_id: str) -> int:
        """Delete every key of the tenant (the erase); cached lookups of them end at once."""
        r = self.client.delete_by_query(
            index=self.keys_index,
            body={"query": tenant_term(tenant_id)},
            params={"refresh": "true", "conflicts": "proceed"},
        )
        with self._lock:
            self._cache.drop(lambda _, hit: hit[0].tenant_id == tenant_id)
        return int(r.get("deleted", 0))

    def forget_user_keys(self, tenant_id: str, user_id: str) -> int:
        """Delete every key held to ``user_id`` of the tenant (forgetting the user): they stop at
        once here, within ``cache_ttl_s`` in every other process. Returns how many."""
        query = {"bool": {"filter": [tenant_term(tenant_id), {"term": {"user_id": user_id}}]}}
        r = self.client.delete_by_query(
            index=self.keys_index, body={"query": query}, params={"refresh": "true", "conflicts": "proceed"}
        )
        with self._lock:
            self._cache.drop(lambda _, hit: hit[0].tenant_id == tenant_id and hit[0].user_id == user_id)
        return int(r.get("deleted", 0))

    def revoke_key(self, key_id: str, tenant_id: str | None = None, user_id: str | None = None) -> str:
        """Revoke the key (NotFound for an unknown id, and, when ``tenant_id`` / ``user_id`` are
        given, for a key of another tenant or user: an organisation revokes only its own keys);
        returns its tenant."""
        r = self.client.search(index=self.keys_index, body={"query": {"term": {"key_id": key_id}}, "size": 1})
        hits = r["hits"]["hits"]
        if not hits:
            raise NotFound("key", key_id)
        src = hits[0]["_source"]
        if (tenant_id is not None and tenant_of(src) != tenant_id) or (
            user_id is not None and src.get("user_id") != user_id
        ):
            raise NotFound("key", key_id)
        self.client.update(
            index=self.keys_index,
            id=hits[0]["_id"],
            body={"doc": {"revoked": True, "revoked_at": datetime.now(UTC).isoformat()}},
            params={"refresh": "true"},
        )
        with self._lock:
            self._cache.pop(hits[0]["_id"])
        return str(hits[0]["_source"][TENANT_FIELD])

    def cached(self, key: str | None) -> str | None:
        """The tenant of a key resolved within the cache TTL, without a round trip; None when the
        key must be looked up (``resolve``). Lets the API answer most requests on the event loop."""
        caller = self.cached_caller(key)
        return caller.tenant_id if caller is not None else None

    def cached_caller(self, key: str | None) -> Caller | None:
        """``cached``, with the key's user and whether it only reads."""
        if not key:
            return None
        with self._lock:
            hit = self._cache.get(hash_key(key))
        return hit[0] if hit and hit[1] > time.monotonic() else None

    def resolve(self, key: str | None) -> str:
        """The tenant of a key; Unauthorized when missing, unknown or revoked."""
        return self.resolve_caller(key).tenant_id

    def resolve_caller(self, key: str | None) -> Caller:
        """The caller of a key (its tenant, its user for a user's key, read-only or not);
        Unauthorized when missing, unknown, revoked or expired."""
        if not key:
            raise Unauthorized("missing API key")
        h = hash_key(key)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(h)
            if hit and hit[1] > now:
                return hit[0]
            refused = self._refused.get(h)
            if refused is not None and refused[1] > now:
                raise Unauthorized(refused[0])
        try:
            doc = self.client.get(index=self.keys_index, id=h)["_source"]
        except NotFoundError:
            raise self._refuse(h, "unknown API key", now) from None
        if doc.get("revoked"):
            raise self._refuse(h, "revoked API key", now)
        until = now + self.cache_ttl_s
        if doc.get("expires_at"):
            left = (datetime.fromisoformat(doc["expires_at"]) - datetime.now(UTC)).total_seconds()
            if left <= 0:
                raise self._refuse(h, "expired API key", now)
            until = min(until, now + left)  # never cached past its expiry
        caller = Caller(str(doc[TENANT_FIELD]), doc.get("user_id"), bool(doc.get("read_only")))
        with self._lock:
            self._cache.put(h, (caller, until))
        return caller

    def _refuse(self, h: str, reason: str, now: float) -> Unauthorized:
        """Remember the key (by hash) as refused for ``unknown_ttl_s``: unknown, revoked and expired
        are all final (keys are random, a revocation is never undone, an expiry never moved)."""
        with self._lock:
            self._refused.put(h, (reason, now + self.unknown_ttl_s))
        return Unauthorized(reason)
