"""`POST /v1/recall`: the spec's MCP parameters in, the spec's response out (+ timings, recall_id)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from brain_search.api.deps import CallerDep, StateDep
from brain_search.models import RecallRequest, RecallResponse

router = APIRouter(prefix="/v1", tags=["recall"])


@router.post("/recall", response_model=RecallResponse)
def recall(body: RecallRequest, caller: CallerDep, state: StateDep) -> Response:
    """Retrieve memories from Brain's 3-D memory space.

    Every result carries both a lexical precision and an embedding similarity (0–1), its Z
    position (0 exact … 1 broad) and its relevance; `query_analysis` says which Z was targeted.
    `recall_id` names this recall for `POST /v1/recall/{recall_id}/feedback`. `user_id` (a
    user's key: its user) reads that user's memories only; `include_shared` adds the
    organisation's shared ones.
    """
    # the model is already validated: serialize it once (FastAPI would validate it again, then
    # encode with the standard json module); the schema still comes from response_model
    resp = state.recall(caller.tenant_id, caller.recall(body))
    return Response(resp.model_dump_json(), media_type="application/json")
