"""Feedback on a recall, and the tenant's summary of it (docs/feedback.md)."""

from __future__ import annotations

from brain_search_client.models.feedback import FeedbackAnswer, FeedbackRequest, FeedbackSummary
from fastapi import APIRouter, Query

from brain_search.api.deps import CallerDep, StateDep
from brain_search.api.routes.memories import AgentQuery, UserQuery
from brain_search.feedback.service import MAX_DAYS

router = APIRouter(prefix="/v1", tags=["feedback"])


@router.post("/recall/{recall_id}/feedback")
def give_feedback(
    recall_id: str,
    body: FeedbackRequest,
    caller: CallerDep,
    state: StateDep,
    *,
    user_id: UserQuery = None,
    agent_id: AgentQuery = None,
) -> FeedbackAnswer:
    """Rate the recall 1–5 (`rating`) and/or mark results relevant or not (`results`). Sent again,
    the rating and each result's mark are replaced. 404: no such recall kept for this tenant
    (unknown, expired, another tenant's, or with a user's key or `user_id` another user's); 422:
    a field out of range, or a result not shown."""
    scope = caller.scope(user_id, agent_id)
    answer = state.feedback.give(caller.tenant_id, recall_id, body, None if scope.everyone else scope)
    state.metrics.observe_feedback(body.rating, [m.relevant for m in body.results])
    return answer


@router.get("/feedback/summary")
def feedback_summary(
    caller: CallerDep,
    state: StateDep,
    days: int | None = Query(None, ge=1, le=MAX_DAYS, description="the last this many days (default: all kept)"),
    user_id: UserQuery = None,
    *,
    agent_id: AgentQuery = None,
) -> FeedbackSummary:
    """The tenant's satisfaction (``user_id``, or a user's key: that user's recalls only): mean
    rating with its 95 % interval, counts, the share of results marked relevant by tier and by
    detected intent, and the worst-rated recent queries."""
    scope = caller.scope(user_id, agent_id)
    return state.feedback.summary(caller.tenant_id, days, None if scope.everyone else scope)
