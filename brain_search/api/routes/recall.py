"""`POST /v1/recall`: the spec's MCP parameters in, the spec's response out (+ timings)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from brain_search.api.deps import StateDep, TenantDep
from brain_search.models import RecallRequest, RecallResponse
from brain_search.retrieval.pipeline import Retriever

router = APIRouter(prefix="/v1", tags=["recall"])


async def get_retriever(state: StateDep) -> Retriever:
    retriever: Retriever = state.retriever
    return retriever


RetrieverDep = Annotated[Retriever, Depends(get_retriever)]


@router.post("/recall", response_model=RecallResponse)
def recall(body: RecallRequest, tenant: TenantDep, state: StateDep, retriever: RetrieverDep) -> Response:
    """Retrieve memories from Brain's 3-D memory space.

    Every result carries both a lexical precision and an embedding similarity (0–1), its Z
    position (0 exact … 1 broad) and its relevance; `query_analysis` says which Z was targeted.
    """
    # the model is already validated: serialize it once (FastAPI would validate it again, then
    # encode with the standard json module); the schema still comes from response_model
    resp = retriever.recall(tenant, body)
    state.metrics.observe_recall(resp.timings)
    return Response(resp.model_dump_json(), media_type="application/json")
