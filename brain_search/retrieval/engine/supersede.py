"""Superseded memories in a recall: a live memory of the tenant whose ``supersedes`` names a
candidate hides it (or, with ``include_superseded``, marks it ``superseded_by``).

Decided at recall time from the tenant's superseding memories, which a sub-search of the recall's
own ``_msearch`` fetches (a search over the candidates' ids follows only when the tenant has more
than ``queries.SUPERSEDERS_SHOWN`` of them). The older memory is never rewritten: deleting the
newer one brings the older back, and a memory superseded before it is even stored is still
hidden once it lands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from opensearchpy import OpenSearch

from brain_search.retrieval.engine import queries
from brain_search.retrieval.engine.candidates import Candidate
from brain_search.store.scope import TenantScope


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


def newer_versions(
    client: OpenSearch, scope: TenantScope, memory_ids: Sequence[str], answer: dict[str, Any] | None = None
) -> dict[str, str]:
    """Which of ``memory_ids`` a live memory supersedes: old id → the newer one's id. ``answer``:
    the recall's own ``queries.superseders`` sub-search; when it holds all of the tenant's
    superseding memories (almost always) no further round trip is made. ``scope``: only memories
    its user holds supersede (``answer`` was made for the same scope)."""
    ids = [m for m in memory_ids if m]
    if not ids:
        return {}
    hits = complete_answer(answer)
    if hits is None:
        body = queries.superseding(scope, ids)
        hits = client.search(index=scope.index, body=body, params=scope.params())["hits"]["hits"]
    wanted = set(ids)
    out: dict[str, str] = {}
    for hit in hits:
        newer, olds = superseded_by(hit)
        for old in olds:
            if old in wanted and old != newer:
                out[old] = newer
    return out


def without_superseded(
    candidates: Mapping[str, Candidate], newer: Mapping[str, str], drop: bool
) -> dict[str, Candidate]:
    """The candidates (doc id → ``Candidate``) less those ``newer`` names (``drop``),
    or with ``superseded_by`` in a copy of their source; the given ones are left as they are (pure)."""
    out: dict[str, Candidate] = {}
    for doc_id, c in candidates.items():
        by = newer.get(str(c.source.get("memory_id", "")))
        if by is None:
            out[doc_id] = c
        elif not drop:
            out[doc_id] = replace(c, source={**c.source, "superseded_by": by})
    return out


@dataclass(frozen=True)
class Versions:
    """A recall's candidates with their current versions (``current_versions``)."""

    marked: dict[str, Candidate]
    """every candidate, the replaced ones marked ``superseded_by`` (they are ranked too, so that
    their current versions can take their place)"""
    shown: dict[str, Candidate]
    """what the response may show: ``marked``, or less the replaced ones"""
    newer: dict[str, str]
    """old memory id → the candidate that replaced it; empty when no candidate was replaced"""


def current_versions(
    client: OpenSearch,
    scope: TenantScope,
    candidates: dict[str, Candidate],
    *,
    superseders: dict[str, Any] | None,
    successors: Callable[[set[str]], dict[str, Candidate]],
    include_superseded: bool,
) -> Versions:
    """The candidates with the current versions of the replaced ones (``successors``: memory ids →
    their candidates, one more search, only when a current version is not a candidate itself)."""
    ids = [c.source.get("memory_id", "") for c in candidates.values()]
    newer = newer_versions(client, scope, ids, superseders)
    replaced = any(c.source.get("memory_id", "") in newer for c in candidates.values())
    if replaced:  # the current versions answer what their old ones answered: they must be candidates
        candidates = {**candidates, **successors(set(newer.values()) - set(ids))}
    marked = without_superseded(candidates, newer, drop=False)
    shown = marked if include_superseded else without_superseded(candidates, newer, drop=True)
    return Versions(marked, shown, newer if replaced else {})
