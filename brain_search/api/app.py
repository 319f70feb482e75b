"""The FastAPI application factory. Heavy things (client, model) are built in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from prometheus_client import CONTENT_TYPE_LATEST

from brain_search.api.deps import api_key_from_headers, check_rate_limit
from brain_search.api.errors import install_error_handlers, rate_limited_response, unauthorized_response
from brain_search.api.limits import RequestLimits
from brain_search.api.metrics import HttpMetrics
from brain_search.api.routes import admin, feedback, health, memories, nodes, page, recall, users, versions
from brain_search.api.state import AppState
from brain_search.api.unfinished import Unfinished
from brain_search.config import Settings, load_settings
from brain_search.encoders.factory import make_query_embedder
from brain_search.encoders.queries import QueryCache
from brain_search.errors import RateLimited, StoreUnavailable, Unauthorized
from brain_search.feedback.service import make_feedback_service
from brain_search.graph.store import GraphStore
from brain_search.ingest.modes import make_ingest_service
from brain_search.mcp.server import build_server
from brain_search.mcp.tools import feedback_tool, mcp_tools
from brain_search.models import RecallRequest, RecallResponse
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.cache_budget import cache_budgets
from brain_search.store.client import make_client
from brain_search.store.following import following
from brain_search.store.indices import ensure_indices
from brain_search.tenancy.audit import AuditLog
from brain_search.tenancy.auth import KeyStore
from brain_search.tenancy.caller import Caller
from brain_search.tenancy.ratelimit import RateLimiter

# Routers of the service, in order. A request is matched against the routes one by one, so the
# busiest route comes first (each route tried before it costs the recall time in the web stack);
# no route of another router shares a path with it.
ROUTERS: tuple[APIRouter, ...] = (
    recall.router,
    health.router,
    admin.router,
    feedback.router,
    versions.router,  # before memories: `/memories/{id}/history` ahead of `/memories/{id:path}`
    memories.router,
    nodes.router,
    users.router,
)


def build_state(settings: Settings) -> AppState:
    """The composition root: every collaborator of the API built once, in one place."""
    client = make_client(settings)
    own = make_query_embedder(settings)
    if own.dimension != settings.embedding_dimension:
        raise RuntimeError(f"model dimension {own.dimension} != BRAIN_EMBEDDING_DIMENSION")
    ensure_indices(client, settings, own.dimension)  # refuses an index another encoder wrote
    # recalls follow each index to its encoder: the shared one after a re-embedding move, a
    # tenant's own index written by another encoder
    embedder = following(client, settings, own, make_query_embedder)
    query_cache = QueryCache(embedder, cache_budgets(settings).query_vectors)
    graph = GraphStore(client, settings)
    ingest = make_ingest_service(settings, client, embedder)
    ingest.purge_expired(settings)
    retriever = Retriever(client, settings, query_cache, graph)
    retriever.warm_up()  # the first user's recall does not pay for lazy loading
    feedback = make_feedback_service(client, settings)
    ingest.set_forgotten(feedback.forget_memories, feedback.forget_owner)
    return AppState(
        settings=settings,
        client=client,
        embedder=embedder,
        query_cache=query_cache,
        keys=KeyStore(client, settings),
        graph=graph,
        retriever=retriever,
        ingest=ingest,
        audit=AuditLog(client, settings),
        feedback=feedback,
        limiter=RateLimiter(settings),
    )


async def _mcp_refusal(app: FastAPI, scope: Any) -> JSONResponse | None:
    """The answer to an MCP request whose key does not resolve (401; 503 when the key store is
    down), or None: the request goes on to the MCP server."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    try:
        key = api_key_from_headers(headers.get("authorization"), headers.get("x-api-key"))
        tenant = await anyio.to_thread.run_sync(app.state.brain.keys.resolve, key)
        await check_rate_limit(app.state.brain, tenant, key)
    except RateLimited as exc:
        return rate_limited_response(app.state.brain, exc)
    except Unauthorized as exc:
        return unauthorized_response(exc)
    except StoreUnavailable as exc:
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "5"})
    return None


def _mcp_app(app: FastAPI) -> StreamableHTTPSessionManager:
    """`brain_recall` over streamable HTTP at /mcp/, with the same API keys as the HTTP API."""

    def recall_fn(tenant: str, req: RecallRequest) -> RecallResponse:
        state: AppState = app.state.brain
        return state.recall(tenant, req)

    async def caller_fn(request: Any) -> Caller:
        headers = getattr(request, "headers", {}) or {}
        key = api_key_from_headers(headers.get("authorization"), headers.get("x-api-key"))
        resolved: Caller = await anyio.to_thread.run_sync(app.state.brain.keys.resolve_caller, key)
        return resolved

    def remember_fn(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        state: AppState = app.state.brain
        return mcp_tools(state.ingest, state.settings, state.graph)[0](caller, args)

    def forget_fn(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        state: AppState = app.state.brain
        return mcp_tools(state.ingest, state.settings, state.graph)[1](caller, args)

    def feedback_fn(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        state: AppState = app.state.brain
        return feedback_tool(state.feedback)(caller, args)

    server = build_server(recall_fn, caller_fn, remember_fn, forget_fn, feedback=feedback_fn)
    manager = StreamableHTTPSessionManager(server, stateless=True, json_response=True)

    async def handle(scope: Any, receive: Any, send: Any) -> None:
        # the key is checked on every request, `initialize` and `tools/list` included
        if scope.get("type") == "http":
            refused = await _mcp_refusal(app, scope)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await manager.handle_request(scope, receive, send)

    app.mount("/mcp", handle)
    return manager


def create_app(settings: Settings | None = None, state: AppState | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.brain = state or build_state(settings or load_settings())
        app.state.brain.metrics.bind(app.state.brain.ingest, app.state.brain.feedback)
        brain = app.state.brain
        brain.ingest.set_forgotten(brain.feedback.forget_memories, brain.feedback.forget_owner)
        anyio.to_thread.current_default_thread_limiter().total_tokens = app.state.brain.settings.api_threads
        # forgets and erases another API left half done (killed, restarted) are finished here
        unfinished = Unfinished(brain.client, brain.settings, brain.ingest.forgetter).start()
        async with mcp_manager.run():
            yield
        unfinished.close()
        if state is None:  # a state passed in (tests) belongs to the caller
            app.state.brain.close()

    app = FastAPI(
        title="brain-search",
        version="0.1.0",
        description="Brain's three-dimensional memory retrieval: X (knowledge graph), Y (semantic), Z (specificity).",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.add_middleware(RequestLimits)
    app.add_middleware(HttpMetrics)  # outermost: refusals by the limits are timed too
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(page.make_router())  # last: its files are listed when the app is built

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        """Prometheus exposition (brain_search/api/metrics.py); no key, like /healthz."""
        body = await anyio.to_thread.run_sync(request.app.state.brain.metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    mcp_manager = _mcp_app(app)
    return app
