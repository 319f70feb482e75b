"""Usage per tenant and per user (issue 67, item 7): memories held, memories written and recalls
made over a window, from the engine's own records in two aggregations (no metric label per tenant:
a Prometheus series per tenant would grow without bound).

- ``memories``: the memories stored now (tombstones hold no tenant and are not counted);
- ``written``: of those, the ones stored within the window (``ingested_at``): writes that are still
  held (a memory written then deleted or overwritten since is not counted);
- ``recalls``: the recalls made within the window, from the records kept for feedback (one per
  recall, ``feedback/``): a window longer than the tenant's retention counts only what is kept.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from brain_search_client.models.admin import Usage, UsageRow
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.index_names import IndexNames
from brain_search.store.placement import placement_for
from brain_search.store.scope import TENANT_FIELD, USER_FIELD, any_tenant, owned

SHARED = "\x00shared"
"""the bucket of the memories and recalls with no user (never a user id: ids have no control character)"""


def _buckets(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(b["key"]): b for b in answer["aggregations"]["by"]["buckets"]}


def usage(
    client: OpenSearch,
    settings: Settings,
    *,
    tenant_id: str | None = None,
    by_user: bool = False,
    days: int = 7,
    limit: int = 100,
) -> Usage:
    """Every tenant's usage (the ``limit`` largest), or one tenant's, or (``by_user``) each user's
    of one tenant."""
    if by_user and tenant_id is None:
        raise ValueError("by_user needs a tenant")
    since = datetime.now(UTC) - timedelta(days=days)
    field = USER_FIELD if by_user else TENANT_FIELD
    terms: dict[str, Any] = {"field": field, "size": limit}
    if by_user:
        terms["missing"] = SHARED
    where = owned(tenant_id) if tenant_id is not None else [any_tenant()]
    recent = {"range": {"ingested_at": {"gte": since.isoformat()}}}
    memories = client.search(
        index=",".join(placement_for(client, settings).every()),
        body={
            "size": 0,
            "query": {"bool": {"filter": where}},
            "aggs": {"by": {"terms": terms, "aggs": {"written": {"filter": recent}}}},
        },
        params={"request_cache": "false"},
    )
    made = {"range": {"at": {"gte": since.isoformat()}}}
    recalls = client.search(
        index=IndexNames.of(settings).feedback,
        body={"size": 0, "query": {"bool": {"filter": [*where, made]}}, "aggs": {"by": {"terms": terms}}},
        params={"request_cache": "false"},
    )
    held, asked = _buckets(memories), _buckets(recalls)
    rows = []
    for key in set(held) | set(asked):
        m, r = held.get(key), asked.get(key)
        row = UsageRow(
            tenant_id=tenant_id if by_user and tenant_id is not None else key,
            user_id=(None if key == SHARED else key) if by_user else None,
            memories=int(m["doc_count"]) if m else 0,
            written=int(m["written"]["doc_count"]) if m else 0,
            recalls=int(r["doc_count"]) if r else 0,
        )
        rows.append(row)
    rows.sort(key=lambda x: (-x.memories, -x.recalls, x.tenant_id, x.user_id or ""))
    return Usage(days=days, since=since, rows=rows[:limit])
