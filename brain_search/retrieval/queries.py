"""Small, tested builders for OpenSearch query bodies (no copy-pasted dicts elsewhere)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any


def scope_filter(
    tenant_id: str,
    node_paths: Sequence[str] = (),
    since: datetime | str | None = None,
    until: datetime | str | None = None,
) -> list[dict[str, Any]]:
    """Filter clauses shared by every sub-search: the tenant, X-axis node subtrees, time range.

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
            rng["gte"] = since.isoformat() if isinstance(since, datetime) else since
        if until is not None:
            rng["lte"] = until.isoformat() if isinstance(until, datetime) else until
        clauses.append({"range": {"timestamp": rng}})
    return clauses


def knn_query(
    vector: Sequence[float], k: int, filters: list[dict[str, Any]], ef_search: int | None = None
) -> dict[str, Any]:
    """An efficient-filtered kNN clause (filter applied inside the HNSW search)."""
    body: dict[str, Any] = {
        "vector": [float(x) for x in vector],
        "k": k,
        "filter": {"bool": {"filter": filters}},
    }
    if ef_search:
        body["method_parameters"] = {"ef_search": max(ef_search, k)}
    return {"knn": {"embedding": body}}


def bm25_match(text: str, filters: list[dict[str, Any]], field: str = "content") -> dict[str, Any]:
    return {"bool": {"must": [{"match": {field: {"query": text}}}], "filter": filters}}


def bm25_phrase(phrase: str, filters: list[dict[str, Any]], field: str = "content") -> dict[str, Any]:
    return {"bool": {"must": [{"match_phrase": {field: {"query": phrase}}}], "filter": filters}}
