"""Which memories a request reads: the tenant, node subtrees, a time range (the filter clauses
every search over the memories shares: recall's sub-searches, listing, forget, node moves)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


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
    exclude_memories: Sequence[str] = (),
    keep_untimed: bool = False,
) -> list[dict[str, Any]]:
    """Filter clauses shared by every sub-search: the tenant, X-axis node subtrees, time range.

    ``keep_untimed``: memories without a timestamp pass the time range too (a range read from
    the query's words: nothing says when those were said, so they are not ruled out).

    ``node_paths`` match their whole subtree: ``node_path`` is indexed with a path-hierarchy
    tokenizer, so ``aiConnected/Brain`` matches ``aiConnected/Brain/Architecture`` but not
    ``aiConnected/BrainStorm`` nor ``aiConnected/Web``.
    """
    clauses: list[dict[str, Any]] = [{"term": {"tenant_id": tenant_id}}]
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
