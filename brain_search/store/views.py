"""Fill the views (``documents.with_view``) of memories written before views, or before the
current view format (2: a binary doc value; 1 was a stored field).

A one-time pass at install over the memories that have none: each is read whole (vector
included) and written back with its view, under its own version (``external_gte``), so its ETag
is unchanged and a write that lands meanwhile (a newer version, with its own view) wins. Until a
memory has its view, recall reads its fields from ``_source`` (``retrieval.engine.sources.fill_sources``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy.helpers import scan, streaming_bulk

from brain_search.store.documents import VIEW_MARK, VIEW_VERSION, with_view

log = logging.getLogger(__name__)
BATCH = 500


def without_views() -> dict[str, Any]:
    """Memories (not tombstones) that have no view of the current format yet."""
    current = {"range": {VIEW_MARK: {"gte": VIEW_VERSION}}}
    return {"bool": {"must_not": [current, {"exists": {"field": "tombstone_of"}}]}}


def fill_views(client: OpenSearch, index: str, progress: Callable[[int], None] | None = None) -> int:
    """Give every memory of ``index`` without a view its view. Returns how many were written
    (a memory rewritten meanwhile is skipped: its newer version has a view)."""
    todo = int(client.count(index=index, body={"query": without_views()})["count"])
    if todo == 0:
        return 0
    log.warning("memories index %s: storing the recall view of %d memories written before views", index, todo)

    def actions() -> Iterator[dict[str, Any]]:
        hits = scan(client, index=index, query={"query": without_views(), "version": True}, size=BATCH)
        for hit in hits:
            yield {
                "_op_type": "index",
                "_id": hit["_id"],
                "_routing": hit.get("_routing"),
                "version": hit["_version"],
                "version_type": "external_gte",
                "_source": with_view(hit["_source"]),
            }

    done = 0
    # the index in the path: the engine refuses one named in a bulk body
    bulk = streaming_bulk(client, actions(), index=index, chunk_size=BATCH, raise_on_error=False, max_retries=3)
    for ok, item in bulk:
        status = next(iter(item.values())).get("status")
        if ok:
            done += 1
            if progress and done % 10_000 == 0:
                progress(done)
        elif status != 409:  # 409: a newer version landed meanwhile, with its view
            raise RuntimeError(f"a memory's view was not stored: {str(item)[:300]}")
    client.indices.refresh(index=index)
    return done
