from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from brain_search.api.deps import StateDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(state: StateDep) -> JSONResponse:
    """Readiness: OpenSearch answers and the memories alias exists."""
    try:
        health = state.client.cluster.health(params={"request_timeout": 2})
        alias_ok = state.client.indices.exists_alias(name=state.settings.memories_alias)
    except Exception as exc:  # readiness reports, it does not raise
        return JSONResponse({"status": "unavailable", "reason": str(exc)[:200]}, status_code=503)
    ok = alias_ok and health.get("status") in ("green", "yellow")
    body = {"status": "ready" if ok else "unavailable", "cluster": health.get("status"), "alias": alias_ok}
    return JSONResponse(body, status_code=200 if ok else 503)
