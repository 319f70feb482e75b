"""A recall hit's fields from its view (``store.documents.with_view``, a doc value), not its ``_source``.

The engine returns the view (JSON in a binary doc value), the memory id and the node path's doc
values, and no stored field; this module
turns them back into the ``_source``-shaped dict the rest of the pipeline reads. A memory stored
before views has none: its fields come from ``_source`` in one ``mget`` for all such hits of the
recall (only until the index's views are filled, ``store.views.fill_views``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opensearchpy import OpenSearch

from brain_search.errors import StoreUnavailable
from brain_search.retrieval.engine.queries import MEMORY_ID_VALUES, NODE_PATH_VALUES, RESULT_FIELDS
from brain_search.store.documents import VIEW_FIELD, memory_doc_id, read_view
from brain_search.store.scope import TenantScope


def view_source(hit: dict[str, Any]) -> dict[str, Any] | None:
    """The hit's recall fields from its view and doc values; None without a view (pure)."""
    fields = hit.get("fields") or {}
    view = fields.get(VIEW_FIELD)
    if not view:
        return None
    src = read_view(view[0])
    paths = fields.get(NODE_PATH_VALUES)
    if paths:
        src["node_path"] = paths[0]
    return src


def hit_id(tenant_id: str, hit: dict[str, Any]) -> str:
    """The hit's ``_id``: the engine's where it sent one, else its tenant and memory id's (a
    recall loads no stored field, ``_id`` included: ``queries.result_fetch``) (pure)."""
    if "_id" in hit:
        return str(hit["_id"])
    memory_ids = (hit.get("fields") or {}).get(MEMORY_ID_VALUES)
    if not memory_ids:
        raise StoreUnavailable("a recall hit came back without its memory id")
    return memory_doc_id(tenant_id, memory_ids[0])


def fill_sources(client: OpenSearch, scope: TenantScope, hit_lists: Sequence[list[dict[str, Any]]]) -> int:
    """Set ``_id`` and ``_source`` on every hit of ``hit_lists`` (in place), ``_source`` from its
    view, or from its stored ``_source`` for hits without one (one ``mget``); a memory deleted in
    between is dropped from its list. Returns how many hits needed the ``mget``."""
    tenant_id = scope.tenant_id
    missing: dict[str, list[dict[str, Any]]] = {}
    read: dict[str, dict[str, Any]] = {}  # a memory in both legs is read once (the same dict)
    for hits in hit_lists:
        for hit in hits:
            hit["_id"] = doc_id = hit_id(tenant_id, hit)
            src = read.get(doc_id)
            if src is None:
                src = view_source(hit)
            if src is None:
                missing.setdefault(doc_id, []).append(hit)
            else:
                hit["_source"] = read[doc_id] = src
    if not missing:
        return 0
    resp = client.mget(
        index=scope.index,
        body={"ids": list(missing)},
        params=scope.params(_source_includes=",".join(RESULT_FIELDS)),
    )
    for doc in resp["docs"]:
        if doc.get("found"):
            for hit in missing[doc["_id"]]:
                hit["_source"] = doc["_source"]
    for hits in hit_lists:
        hits[:] = [h for h in hits if "_source" in h]
    return len(missing)
