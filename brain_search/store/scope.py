"""Which memories a request reads and writes: the tenant, the user (and agent) inside it, node
subtrees, a time range (the filter clauses every search over the memories shares: recall's
sub-searches, listing, forget, node moves), and where they live.

Tenant isolation has its one owner here. ``TenantScope``, built once per recall or write from the
placement, holds the index the tenant's memories are read and written through, the routing and
the tenant's (and user's) filter clauses; a search of any other index that keeps a tenant's
documents (nodes, history, dead letters, recall records, keys) starts from ``tenant_term`` /
``owned``, and a document written for a tenant takes its field from ``tenant_fields``. Nothing else
in the service writes a filter on ``tenant_id`` (``TENANT_FIELD``), ``user_id`` or ``agent_id``,
and a read of one document by its id asks ``TenantScope.holds`` / ``UserScope.holds``
(``tests/unit/test_tenant_scope.py`` fails on a tenant term written anywhere else).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

TENANT_FIELD = "tenant_id"
"""the field every document of a tenant holds its tenant in"""
TOMBSTONE_FIELD = "tombstone_of"
"""the field a delete's tombstone holds its tenant in (``ingest/tombstones.py``)"""
USER_FIELD = "user_id"
AGENT_FIELD = "agent_id"


def tenant_term(tenant_id: str) -> dict[str, Any]:
    """The tenant's filter term: what every search of a tenant's documents starts from (pure)."""
    return {"term": {TENANT_FIELD: tenant_id}}


def any_tenant() -> dict[str, Any]:
    """The documents that belong to a tenant (every tenant's: an operator's cross-tenant report)."""
    return {"exists": {"field": TENANT_FIELD}}


def tenant_fields(tenant_id: str) -> dict[str, str]:
    """The tenant's field of a document written for it (pure)."""
    return {TENANT_FIELD: tenant_id}


def tenant_of(doc: Mapping[str, Any]) -> str | None:
    """The tenant a stored document belongs to (None: a tombstone, or no tenant's) (pure)."""
    tenant = doc.get(TENANT_FIELD)
    return None if tenant is None else str(tenant)


def tenant_documents(tenant_id: str) -> dict[str, Any]:
    """Every memories document of the tenant: its memories and its tombstones (pure)."""
    either = [tenant_term(tenant_id), {"term": {TOMBSTONE_FIELD: tenant_id}}]
    return {"bool": {"should": either, "minimum_should_match": 1}}


def _missing(field: str) -> dict[str, Any]:
    return {"bool": {"must_not": [{"exists": {"field": field}}]}}


@dataclass(frozen=True)
class UserScope:
    """The user (and agent) a request acts for inside its tenant.

    - ``user_id``: only that user's memories; none: every user's (an organisation key that names
      no user: the whole tenant, as before users existed).
    - ``agent_id``: only that agent's memories; none: any agent's.
    - ``include_shared``: also the organisation's shared memories, those with no user (with an
      ``agent_id``: those of that agent or of no agent). Reads only: a write, a forget and a
      delete never reach past the scope's own memories.
    """

    user_id: str | None = None
    agent_id: str | None = None
    include_shared: bool = False

    @property
    def everyone(self) -> bool:
        """No user and no agent named: the whole tenant."""
        return self.user_id is None and self.agent_id is None

    def own(self) -> UserScope:
        """The same user and agent without the shared memories (what a write or forget reaches)."""
        return UserScope(self.user_id, self.agent_id)

    def clauses(self) -> list[dict[str, Any]]:
        """Filter clauses of the scope (none for the whole tenant), for the memories and for every
        index that keeps ``user_id`` / ``agent_id`` beside a memory's copy (pure)."""
        own: list[dict[str, Any]] = []
        if self.user_id is not None:
            own.append({"term": {USER_FIELD: self.user_id}})
        if self.agent_id is not None:
            own.append({"term": {AGENT_FIELD: self.agent_id}})
        if not own or not self.include_shared or self.user_id is None:
            return own
        shared: list[dict[str, Any]] = [_missing(USER_FIELD)]
        if self.agent_id is not None:
            agent = {"term": {AGENT_FIELD: self.agent_id}}
            shared.append({"bool": {"should": [agent, _missing(AGENT_FIELD)], "minimum_should_match": 1}})
        either = [{"bool": {"filter": own}}, {"bool": {"filter": shared}}]
        return [{"bool": {"should": either, "minimum_should_match": 1}}]

    def holds(self, doc: Mapping[str, Any]) -> bool:
        """Whether a memory (its stored fields) is in the scope: the clauses' test for one document
        read by its id (pure)."""
        user, agent = doc.get(USER_FIELD), doc.get(AGENT_FIELD)
        agent_ok = self.agent_id is None or agent == self.agent_id
        if self.user_id is None:
            return agent_ok
        if user == self.user_id:
            return agent_ok
        return self.include_shared and user is None and (agent_ok or agent is None)

    def owns(self, doc: Mapping[str, Any]) -> bool:
        """Whether a memory's owner is exactly this user and agent (none: none): the test a write
        of an existing memory id passes, so that no write moves a memory to another owner (pure)."""
        return doc.get(USER_FIELD) == self.user_id and doc.get(AGENT_FIELD) == self.agent_id


EVERYONE = UserScope()
JOB_USERS_FIELD = "user_ids"
"""an ingest task record's users (``ingest/task_records.py``)"""


def jobs_of(scope: UserScope) -> list[dict[str, Any]]:
    """Clauses for the ingest task records that wrote for ``scope``'s user (none without a user:
    a record keeps its users, not its agents) (pure)."""
    return [{"term": {JOB_USERS_FIELD: scope.user_id}}] if scope.user_id is not None else []


def owned(tenant_id: str, scope: UserScope | None = None) -> list[dict[str, Any]]:
    """The tenant's term and the user scope's clauses: what every search of a tenant's memories,
    or of their copies in another index, starts from (pure)."""
    return [tenant_term(tenant_id), *(scope.clauses() if scope is not None else [])]


def _engine_time(t: datetime | str) -> str:
    """A time as the engine parses it: an aware datetime in UTC (the engine refuses offsets past
    ±18:00, which Python accepts: "+22:17" was a 503 instead of a range)."""
    if isinstance(t, str):
        return t
    return (t.astimezone(UTC) if t.tzinfo is not None else t).isoformat()


def scope_filter(
    tenant_id: str,
    node_paths: Sequence[str] = (),
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    *,
    exclude_memories: Sequence[str] = (),
    keep_untimed: bool = False,
    scope: UserScope | None = None,
) -> list[dict[str, Any]]:
    """Filter clauses shared by every sub-search: the tenant, the user scope, X-axis node
    subtrees, time range.

    ``keep_untimed``: memories without a timestamp pass the time range too (a range read from
    the query's words: nothing says when those were said, so they are not ruled out).

    ``node_paths`` match their whole subtree: ``node_path`` is indexed with a path-hierarchy
    tokenizer, so ``aiConnected/Brain`` matches ``aiConnected/Brain/Architecture`` but not
    ``aiConnected/BrainStorm`` nor ``aiConnected/Web``.
    """
    clauses = owned(tenant_id, scope)
    if node_paths:
        clauses.append({"terms": {"node_path": [p.strip("/") for p in node_paths]}})
    if since is not None or until is not None:
        rng: dict[str, str] = {}
        if since is not None:
            rng["gte"] = _engine_time(since)
        if until is not None:
            rng["lte"] = _engine_time(until)
        in_range: dict[str, Any] = {"range": {"timestamp": rng}}
        if keep_untimed:
            untimed = {"bool": {"must_not": [{"exists": {"field": "timestamp"}}]}}
            in_range = {"bool": {"should": [in_range, untimed], "minimum_should_match": 1}}
        clauses.append(in_range)
    if exclude_memories:
        clauses.append({"bool": {"must_not": [{"terms": {"memory_id": list(exclude_memories)}}]}})
    return clauses


class Placing(Protocol):
    """Where a tenant's memories live (``store.placement.Placement``)."""

    def index(self, tenant_id: str) -> str: ...


@dataclass(frozen=True)
class TenantScope:
    """One tenant's reach into the memories, for one recall or one write: the index its memories
    are read and written through (looked up once, from the placement), the routing its documents
    are written with, and the filter clauses of the tenant and of the user inside it.

    Built with ``TenantScope.of`` where a recall or a write starts and passed down: no stage
    below looks the index up again or writes a tenant's term itself."""

    tenant_id: str
    index: str
    user: UserScope = EVERYONE

    @classmethod
    def of(cls, placement: Placing, tenant_id: str, user: UserScope | None = None) -> TenantScope:
        """The scope of ``tenant_id`` (and ``user`` in it) where ``placement`` puts its memories now."""
        return cls(tenant_id, placement.index(tenant_id), user if user is not None else EVERYONE)

    @property
    def routing(self) -> str:
        """The routing of the tenant's documents (the tenant's id)."""
        return self.tenant_id

    def params(self, **extra: Any) -> dict[str, Any]:
        """Request parameters routed to the tenant's shards, with ``extra``."""
        return {"routing": self.tenant_id, **extra}

    def filters(self) -> list[dict[str, Any]]:
        """The tenant's term and the user's clauses (``owned``)."""
        return owned(self.tenant_id, self.user)

    def tenant_only(self) -> list[dict[str, Any]]:
        """The tenant's term alone: every user's memories (a write's own checks, a piece's parent)."""
        return [tenant_term(self.tenant_id)]

    def memories(
        self,
        node_paths: Sequence[str] = (),
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        *,
        exclude_memories: Sequence[str] = (),
        keep_untimed: bool = False,
    ) -> list[dict[str, Any]]:
        """The filter clauses of a search of the memories in the scope (``scope_filter``)."""
        return scope_filter(
            self.tenant_id,
            node_paths,
            since,
            until,
            exclude_memories=exclude_memories,
            keep_untimed=keep_untimed,
            scope=self.user,
        )

    def holds(self, doc: Mapping[str, Any]) -> bool:
        """Whether a stored document is one of the tenant's that the user reads (pure)."""
        return tenant_of(doc) == self.tenant_id and self.user.holds(doc)

    def for_user(self, user: UserScope) -> TenantScope:
        """The same tenant and index for another user scope."""
        return TenantScope(self.tenant_id, self.index, user)
