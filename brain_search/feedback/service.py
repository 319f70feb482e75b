"""Feedback as the API, MCP and CLI use it: record a recall, take feedback on it, summarise."""

from __future__ import annotations

import time

from brain_search_client.models.feedback import RECALL_ID_RE, FeedbackAnswer, FeedbackRequest, FeedbackSummary
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.errors import InvalidInput, NotFound
from brain_search.feedback.recorder import RecallRecorder
from brain_search.feedback.store import FeedbackStore
from brain_search.models import RecallRequest, RecallResponse
from brain_search.store.scope import UserScope

MAX_DAYS = 3650


class FeedbackService:
    def __init__(self, store: FeedbackStore, recorder: RecallRecorder, settle_s: float) -> None:
        self.store = store
        self.recorder = recorder
        # another API replica's recorder may not have written a fresh recall yet: one more look
        # after this long before a 404
        self.settle_s = settle_s

    def record(self, tenant_id: str, req: RecallRequest, resp: RecallResponse) -> RecallResponse:
        return self.recorder.record(tenant_id, req, resp)

    def give(
        self, tenant_id: str, recall_id: str, req: FeedbackRequest, scope: UserScope | None = None
    ) -> FeedbackAnswer:
        """NotFound for an id that is malformed, unknown, expired, another tenant's or another
        user's (``scope``) (all alike)."""
        if not RECALL_ID_RE.match(recall_id):
            raise NotFound("recall", recall_id[:40])
        self.recorder.flush_for(recall_id)
        try:
            return self.store.give(tenant_id, recall_id, req, scope)
        except NotFound:
            time.sleep(self.settle_s)
            return self.store.give(tenant_id, recall_id, req, scope)

    def summary(self, tenant_id: str, days: int | None = None, scope: UserScope | None = None) -> FeedbackSummary:
        """Over the last ``days`` (default: the tenant's whole retention)."""
        kept_days = max(1, -(-self.store.retention_s(tenant_id) // 86400))
        if days is not None and not 1 <= days <= MAX_DAYS:
            raise InvalidInput("days", f"between 1 and {MAX_DAYS}", where="query")
        return self.store.summary(tenant_id, min(days or kept_days, kept_days), scope)

    def forget_memories(self, tenant_id: str, memory_ids: list[str] | None) -> int:
        self.recorder.flush()  # a record still waiting must not bring a forgotten memory back
        return self.store.forget_memories(tenant_id, memory_ids)

    def forget_owner(self, tenant_id: str, scope: UserScope) -> int:
        self.recorder.flush()  # a record still waiting must not outlive its user's forget
        return self.store.forget_owner(tenant_id, scope)

    def close(self) -> None:
        self.recorder.close()


def make_feedback_service(client: OpenSearch, settings: Settings) -> FeedbackService:
    store = FeedbackStore(client, settings)
    s = settings
    recorder = RecallRecorder(store.write, s.feedback_flush_s, s.feedback_max_pending, store.purge_expired)
    return FeedbackService(store, recorder, settle_s=settings.feedback_flush_s * 2)
