"""Superseded memories in a recall: a live memory of the tenant whose ``supersedes`` names a
candidate hides it (or, with ``include_superseded``, marks it ``superseded_by``).

Decided at recall time by one more search over the candidates' ids (routed by tenant), never by
rewriting the older memory: deleting the newer one brings the older back, and a memory superseded
before it is even stored is still hidden once it lands.
"""

from __future__ import annotations

from typing import Any

from opensearchpy import OpenSearch

from brain_search.retrieval import queries


def supersede(client: OpenSearch, alias: str, tenant_id: str, candidates: dict[str, Any], drop: bool) -> None:
    """Drop (``drop``) or mark, in place, the candidates (doc id → ``Candidate``) a live memory supersedes."""
    by_id = {c.source.get("memory_id"): doc_id for doc_id, c in candidates.items()}
    ids = [m for m in by_id if m]
    if not ids:
        return
    r = client.search(index=alias, body=queries.superseding(tenant_id, ids), params={"routing": tenant_id})
    for hit in r["hits"]["hits"]:
        newer = hit["_source"]["memory_id"]
        for old in hit["_source"].get("supersedes") or []:
            doc_id = by_id.get(old)
            if doc_id is None or old == newer:
                continue
            if drop:
                candidates.pop(doc_id, None)
            else:
                candidates[doc_id].source["superseded_by"] = newer
