"""Feedback on a recall, and the tenant's summary of it (docs/feedback.md)."""

from __future__ import annotations

from fastapi import APIRouter, Query

from brain_search.api.deps import StateDep, TenantDep
from brain_search.feedback.models import FeedbackAnswer, FeedbackRequest, FeedbackSummary
from brain_search.feedback.service import MAX_DAYS

router = APIRouter(prefix="/v1", tags=["feedback"])


@router.post("/recall/{recall_id}/feedback")
def give_feedback(recall_id: str, body: FeedbackRequest, tenant: TenantDep, state: StateDep) -> FeedbackAnswer:
    """Rate the recall 1–5 (`rating`) and/or mark results relevant or not (`results`). Sent again,
    the rating and each result's mark are replaced. 404: no such recall kept for this tenant
    (unknown, expired, or another tenant's); 422: a field out of range, or a result not shown."""
    answer = state.feedback.give(tenant, recall_id, body)
    state.metrics.observe_feedback(body.rating, [m.relevant for m in body.results])
    return answer


@router.get("/feedback/summary")
def feedback_summary(
    tenant: TenantDep,
    state: StateDep,
    days: int | None = Query(None, ge=1, le=MAX_DAYS, description="the last this many days (default: all kept)"),
) -> FeedbackSummary:
    """The tenant's satisfaction: mean rating with its 95 % interval, counts, the share of results
    marked relevant by tier and by detected intent, and the worst-rated recent queries."""
    return state.feedback.summary(tenant, days)
