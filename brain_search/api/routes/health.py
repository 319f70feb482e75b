from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from brain_search.api.deps import StateDep
from brain_search.store.placement import placement_for

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Liveness: the process answers. On the event loop, touching neither the engine nor the
    thread pool that blocking request work waits in, so a slow engine never fails liveness."""
    return {"status": "ok"}


def _redis_ok(url: str) -> tuple[bool, str | None]:
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        try:
            return bool(client.ping()), None
        finally:
            client.close()
    except Exception as exc:  # readiness reports, it does not raise
        return False, str(exc)[:200]


@router.get("/readyz")
def readyz(state: StateDep) -> JSONResponse:
    """Readiness: OpenSearch answers, the memories alias exists, the tenants' own indices can be
    looked up (``own_indices``: how many) and, in worker mode, Redis (the task queue) answers.
    ``encoders``: the process's own and those it loaded for indices another encoder wrote, with
    the resident memory each took when it loaded (MB)."""
    try:
        health = state.client.cluster.health(params={"request_timeout": 2})
        alias_ok = state.client.indices.exists_alias(name=state.settings.memories_alias)
        own = len(placement_for(state.client, state.settings).own())  # the tenant lookup answers
    except Exception as exc:  # readiness reports, it does not raise
        return JSONResponse({"status": "unavailable", "reason": str(exc)[:200]}, status_code=503)
    ok = alias_ok and health.get("status") in ("green", "yellow")
    body: dict[str, object] = {"cluster": health.get("status"), "alias": alias_ok, "mode": state.ingest.mode}
    body["own_indices"] = own
    loaded = getattr(state.embedder, "resident_mb", None)
    if loaded is not None:  # the encoders this process loaded past its own, and the memory each took
        body["encoders"] = {
            "own": state.settings.embedding_model,
            "loaded_mb": {k: round(v) for k, v in loaded.items()},
        }
    if state.settings.redis_url:
        redis_ok, reason = _redis_ok(state.settings.redis_url)
        body["redis"] = redis_ok
        if not redis_ok:
            body["reason"] = f"redis: {reason}"
        ok = ok and redis_ok
    body["status"] = "ready" if ok else "unavailable"
    return JSONResponse(body, status_code=200 if ok else 503)
