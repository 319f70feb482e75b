"""A recall's record (pure): what a recall returned, kept so that feedback can refer to it — the
query, its analysis, the request's parameters, and per result shown its id, Z, scores, tier and
rank. No memory text is copied: a result is its id and numbers. Feedback is added to the same
document (``rating``, ``marks``)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from brain_search.models import MemoryResult, RecallRequest, RecallResponse
from brain_search.retrieval.score.tiers import TIER_NAMES, tier_of
from brain_search.store.scope import TENANT_FIELD


def new_recall_id() -> str:
    """A random recall id (96 bits): unguessable, so an id is no hint of another tenant's recall."""
    return f"rc_{secrets.token_hex(12)}"


def record_doc_id(tenant_id: str, recall_id: str) -> str:
    """The document id of a tenant's recall: the same recall id under another tenant is another
    document, which does not exist (a 404, never a 403)."""
    return hashlib.sha256(f"{tenant_id}\x1f{recall_id}".encode()).hexdigest()[:40]


def shown(resp: RecallResponse) -> list[tuple[MemoryResult, str]]:
    """Every result the caller was shown, once each, with its tier: the ranked list, then the
    tiers' members not in it (a tiered answer may show a memory the list cut)."""
    out: dict[str, tuple[MemoryResult, str]] = {}
    for r in resp.results:
        out.setdefault(r.id, (r, tier_of(r.scores.z_position)))
    if resp.tiers is not None:
        for name in TIER_NAMES:
            for r in getattr(resp.tiers, name):
                out.setdefault(r.id, (r, name))
    return list(out.values())


def recall_record(
    tenant_id: str, recall_id: str, req: RecallRequest, resp: RecallResponse, *, at: datetime
) -> dict[str, Any]:
    """The record of one recall, without ``expires_at`` (set when it is written: the tenant's
    retention). Rounded numbers: the record is for judging, not for re-ranking bit for bit."""
    qa = resp.query_analysis
    results = [
        {
            "id": r.id,
            "rank": i + 1,
            "tier": tier,
            "z": round(r.scores.z_position, 4),
            "relevance": round(r.scores.relevance, 4),
            "rank_score": round(r.scores.rank, 4),
            "lexical": round(r.scores.lexical, 4),
            "semantic": round(r.scores.semantic, 4),
            "match": round(r.scores.match, 4),
            "match_kind": r.match_kind.value,
        }
        for i, (r, tier) in enumerate(shown(resp))
    ]
    owner = {k: v for k, v in (("user_id", req.user_id), ("agent_id", req.agent_id)) if v is not None}
    return {
        TENANT_FIELD: tenant_id,
        "recall_id": recall_id,
        **owner,  # whose recall: their feedback, their summary, and forgetting them find it
        "at": at.isoformat(),
        "query": req.query,
        "intent": qa.detected_intent.value,
        "analysis": qa.model_dump(mode="json", exclude={"lexical_query"}),
        "request": req.model_dump(mode="json", exclude={"query"}, exclude_defaults=True),
        "results": results,
        "memory_ids": [r["id"] for r in results],
    }


def with_expiry(doc: dict[str, Any], retention_s: int) -> dict[str, Any]:
    at = datetime.fromisoformat(doc["at"])
    return {**doc, "expires_at": (at + timedelta(seconds=retention_s)).isoformat()}


def apply_feedback(
    doc: dict[str, Any], rating: int | None, marks: list[tuple[str, bool]], now: datetime
) -> dict[str, Any]:
    """The fields a feedback request changes on the record ``doc``: the rating (when given) and the
    marks, one per memory (the newest replaces an earlier one). A memory must be one of the
    results shown: ``KeyError`` names the first that is not."""
    by_id = {r["id"]: r for r in doc.get("results", [])}
    current = {m["memory_id"]: m for m in doc.get("marks") or []}
    for memory_id, relevant in marks:
        result = by_id[memory_id]
        current[memory_id] = {
            "memory_id": memory_id,
            "relevant": relevant,
            "tier": result["tier"],
            "rank": result["rank"],
        }
    ordered = sorted(current.values(), key=lambda m: m["rank"])
    changed: dict[str, Any] = {"marks": ordered, "updated_at": now.isoformat()}
    if rating is not None:
        changed["rating"] = rating
        changed["rated_at"] = now.isoformat()
    return changed
