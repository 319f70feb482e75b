"""Superseded memories in a recall: a live memory of the tenant whose ``supersedes`` names a
candidate hides it (or, with ``include_superseded``, marks it ``superseded_by``).

Decided at recall time from the tenant's superseding memories, which a sub-search of the recall's
own ``_msearch`` fetches (a search over the candidates' ids follows only when the tenant has more
than ``queries.SUPERSEDERS_SHOWN`` of them). The older memory is never rewritten: deleting the
newer one brings the older back, and a memory superseded before it is even stored is still
hidden once it lands.
"""

from __future__ import annotations

from typing import Any

from opensearchpy import OpenSearch

from brain_search.retrieval import queries


def complete_answer(answer: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The hits of a ``queries.superseders`` answer when they are all of the tenant's superseding
    memories; ``None`` when some were left out (pure)."""
    if answer is None:
        return None
    hits = answer["hits"]["hits"]
    total = answer["hits"]["total"]
    return hits if total["relation"] == "eq" and int(total["value"]) <= len(hits) else None


def superseded_by(hit: dict[str, Any]) -> tuple[str, list[str]]:
    """A superseding memory's id and the ids it supersedes, from the doc values a
    ``queries.SUPERSEDER_FETCH`` hit carries (pure)."""
    fields = hit.get("fields", {})
    return fields["memory_id"][0], list(fields.get("supersedes") or [])


def supersede(
    client: OpenSearch,
    alias: str,
    tenant_id: str,
    candidates: dict[str, Any],
    drop: bool,
    answer: dict[str, Any] | None = None,
) -> None:
    """Drop (``drop``) or mark, in place, the candidates (doc id → ``Candidate``) a live memory
    supersedes. ``answer``: the recall's own ``queries.superseders`` sub-search; when it holds all
    of the tenant's superseding memories (almost always) no further round trip is made."""
    by_id = {c.source.get("memory_id"): doc_id for doc_id, c in candidates.items()}
    ids = [m for m in by_id if m]
    if not ids:
        return
    hits = complete_answer(answer)
    if hits is None:
        body = queries.superseding(tenant_id, ids)
        hits = client.search(index=alias, body=body, params={"routing": tenant_id})["hits"]["hits"]
    for hit in hits:
        newer, olds = superseded_by(hit)
        for old in olds:
            doc_id = by_id.get(old)
            if doc_id is None or old == newer:
                continue
            if drop:
                candidates.pop(doc_id, None)
            else:
                candidates[doc_id].source["superseded_by"] = newer
