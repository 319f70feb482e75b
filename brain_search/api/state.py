"""What the API process holds: built once in the lifespan, reached through `api/deps.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opensearchpy import OpenSearch

from brain_search.auth import KeyStore
from brain_search.config import Settings
from brain_search.embedding import Embedder, QueryCache
from brain_search.graph import GraphStore


@dataclass
class AppState:
    settings: Settings
    client: OpenSearch
    embedder: Embedder
    query_cache: QueryCache
    keys: KeyStore
    graph: GraphStore
    # services added by later modules (retriever, ingest queue, graph) register here by name
    services: dict[str, Any] = field(default_factory=dict)
