"""What the API process holds: built once by ``api.app.build_state`` (the composition root),
reached through ``api/deps.py``."""

from __future__ import annotations

from dataclasses import dataclass, field

from opensearchpy import OpenSearch

from brain_search.api.metrics import Metrics
from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.encoders.queries import QueryCache
from brain_search.feedback.service import FeedbackService
from brain_search.graph.store import GraphStore
from brain_search.ingest.service import IngestService
from brain_search.models import RecallRequest, RecallResponse
from brain_search.retrieval.pipeline import Retriever
from brain_search.tenancy.audit import AuditLog
from brain_search.tenancy.auth import KeyStore
from brain_search.tenancy.ratelimit import RateLimiter


@dataclass
class AppState:
    settings: Settings
    client: OpenSearch
    embedder: Embedder
    """the query encoder (documents are embedded by the ingest service's own)"""
    query_cache: QueryCache
    keys: KeyStore
    graph: GraphStore
    retriever: Retriever
    ingest: IngestService
    audit: AuditLog
    feedback: FeedbackService
    """recall records and the feedback on them"""
    metrics: Metrics = field(default_factory=Metrics)
    limiter: RateLimiter | None = None
    """per-key rate limits (None: none)"""

    def recall(self, tenant_id: str, req: RecallRequest) -> RecallResponse:
        """A recall as every door serves it (HTTP, MCP): timed, and kept for feedback (``recall_id``)."""
        resp = self.retriever.recall(tenant_id, req)
        self.metrics.observe_recall(resp.timings)
        return self.feedback.record(tenant_id, req, resp)

    def close(self) -> None:
        self.feedback.close()
        self.ingest.close()
        self.retriever.close()
        self.client.close()
