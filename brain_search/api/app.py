"""The FastAPI application factory. Heavy things (client, model) are built in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from brain_search.api.errors import install_error_handlers
from brain_search.api.routes import admin, health, memories
from brain_search.api.state import AppState
from brain_search.auth import KeyStore
from brain_search.config import Settings, load_settings
from brain_search.embedding import QueryCache, make_embedder
from brain_search.graph import GraphStore
from brain_search.ingest.service import make_ingest_service
from brain_search.store.client import make_client
from brain_search.store.templates import install_memories_index

# Routers of the service, in order. Later modules append theirs here.
ROUTERS: list[APIRouter] = [health.router, admin.router, memories.router]
# Hooks that add services to AppState.services at startup (name → factory(state)).
SERVICE_FACTORIES: dict[str, Callable[[AppState], object]] = {"ingest": make_ingest_service}


def build_state(settings: Settings) -> AppState:
    client = make_client(settings)
    embedder = make_embedder(settings)
    if embedder.dimension != settings.embedding_dimension:
        raise RuntimeError(f"model dimension {embedder.dimension} != BRAIN_EMBEDDING_DIMENSION")
    install_memories_index(client, settings, embedder.dimension)
    keys = KeyStore(client, settings)
    keys.install()
    graph = GraphStore(client, settings)
    graph.install()
    state = AppState(settings, client, embedder, QueryCache(embedder, settings.query_cache_size), keys, graph)
    for name, factory in SERVICE_FACTORIES.items():
        state.services[name] = factory(state)
    return state


def create_app(settings: Settings | None = None, state: AppState | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.brain = state or build_state(settings or load_settings())
        yield
        for service in app.state.brain.services.values():
            close = getattr(service, "close", None)
            if callable(close):
                close()
        app.state.brain.client.close()

    app = FastAPI(
        title="brain-search",
        version="0.1.0",
        description="Brain's three-dimensional memory retrieval: X (knowledge graph), Y (semantic), Z (specificity).",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    return app
