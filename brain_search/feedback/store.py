"""The feedback index (``<prefix>-feedback``): one document per recall, its feedback on it.

Why OpenSearch and not Redis: every deployment has the engine, Redis only in worker mode; the
summary is an aggregation (ratings, nested marks by tier and by intent) that the engine answers in
one request; forgetting a memory is one ``_update_by_query`` and erasing a tenant one more index in
its ``_delete_by_query`` pass. A record's lifetime is its ``expires_at`` (the tenant's retention):
every read filters on it, and expired records are purged at start and every hour.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

import orjson
from brain_search_client.models.feedback import (
    WORST_QUERIES,
    FeedbackAnswer,
    FeedbackRequest,
    FeedbackSummary,
    MarkOut,
    WorstQuery,
)
from opensearchpy import ConflictError, OpenSearch

from brain_search.config import Settings
from brain_search.errors import Conflict, InvalidInput, NotFound
from brain_search.feedback import queries
from brain_search.feedback.records import apply_feedback, record_doc_id, with_expiry
from brain_search.feedback.summary import parse_summary
from brain_search.lru import ByteLRU
from brain_search.store.cache_budget import cache_budgets
from brain_search.store.indices import IndexNames
from brain_search.store.scope import UserScope, owned, tenant_of, tenant_term

log = logging.getLogger(__name__)
RETENTION_CACHE_S = 30.0
UPDATE_TRIES = 5


class FeedbackStore:
    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        names = IndexNames.of(settings)
        self.index = names.feedback
        self.tenants_index = names.tenants
        self.max_retention_s = settings.feedback_retention_max_s
        self.default_retention_s = min(settings.feedback_retention_s, self.max_retention_s)
        # tenant id → its retention and until when (``RETENTION_CACHE_S``), about 0.4 KB a tenant,
        # bounded by the ``retention`` share of ``cache_mib`` (the least recently used out first);
        # a miss costs one GET of the tenant's document
        self._retention: ByteLRU[str, tuple[int, float]] = ByteLRU(cache_budgets(settings).retention)
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- retention
    def retention_s(self, tenant_id: str) -> int:
        """How long the tenant's recalls are kept: its own setting or the default, at most the
        maximum (cached ``RETENTION_CACHE_S``)."""
        now = time.monotonic()
        with self._lock:
            hit = self._retention.get(tenant_id)
        if hit and hit[1] > now:
            return hit[0]
        r = self.client.get(index=self.tenants_index, id=tenant_id, ignore=[404])
        own = (r.get("_source") or {}).get("feedback_retention_s")
        value = min(int(own), self.max_retention_s) if own else self.default_retention_s
        with self._lock:
            self._retention.put(tenant_id, (value, now + RETENTION_CACHE_S))
        return value

    def set_retention(self, tenant_id: str, retention_s: int | None) -> int:
        """The tenant's own retention (None: back to the default); records already kept keep
        their expiry. Returns the retention now in force."""
        if retention_s is not None and not 3600 <= retention_s <= self.max_retention_s:
            raise InvalidInput("retention_s", f"between 3600 and {self.max_retention_s} seconds (or null)")
        self.client.update(
            index=self.tenants_index,
            id=tenant_id,
            body={"doc": {"feedback_retention_s": retention_s}},
            params={"refresh": "true"},
        )
        with self._lock:
            self._retention.pop(tenant_id)
        return retention_s or self.default_retention_s

    # ---------------------------------------------------------------- records
    def write(self, records: list[tuple[str, dict[str, Any]]]) -> tuple[int, int]:
        """Index recall records (tenant, record without expiry) in one ``_bulk`` to the index's own
        path (the engine refuses an index named in a bulk body); (written, failed)."""
        # NDJSON built with orjson: the stock serializer of ``helpers.bulk`` was most of the
        # recorder's CPU, and every recall leaves a record (issue 56)
        if not records:
            return 0, 0
        lines: list[bytes] = []
        for tenant, doc in records:
            lines.append(orjson.dumps({"index": {"_id": record_doc_id(tenant, doc["recall_id"])}}))
            lines.append(orjson.dumps(with_expiry(doc, self.retention_s(tenant))))
        resp = self.client.bulk(body=b"\n".join(lines) + b"\n", index=self.index, params={"refresh": "false"})
        failed = [item for item in resp.get("items", []) if item.get("index", {}).get("error")]
        ok = len(records) - len(failed)
        for err in failed[:3]:
            log.warning("a recall record was not written: %s", err)
        return ok, len(failed)

    def get(self, tenant_id: str, recall_id: str, scope: UserScope | None = None) -> dict[str, Any] | None:
        """The tenant's kept record of ``recall_id`` with its ``_seq_no``, or None (unknown, another
        tenant's, a recall made for a user ``scope`` does not hold, or expired)."""
        r: dict[str, Any] = self.client.get(index=self.index, id=record_doc_id(tenant_id, recall_id), ignore=[404])
        src = r.get("_source") if r.get("found") else None
        if not src or tenant_of(src) != tenant_id or src.get("recall_id") != recall_id:
            return None
        if scope is not None and not scope.own().holds(src):
            return None
        if datetime.fromisoformat(src["expires_at"]) <= datetime.now(UTC):
            return None
        return r

    def give(
        self, tenant_id: str, recall_id: str, req: FeedbackRequest, scope: UserScope | None = None
    ) -> FeedbackAnswer:
        """Add ``req`` to the recall's record (optimistic concurrency: two raters of one recall both
        count). NotFound for a record this tenant does not have; InvalidInput for a result that was
        not shown."""
        for _ in range(UPDATE_TRIES):
            hit = self.get(tenant_id, recall_id, scope)
            if hit is None:
                raise NotFound("recall", recall_id)
            doc = hit["_source"]
            shown = set(doc.get("memory_ids") or [])
            for i, mark in enumerate(req.results):
                if mark.memory_id not in shown:
                    raise InvalidInput(f"results.{i}.memory_id", "was not among the results of this recall")
            marks = [(m.memory_id, m.relevant) for m in req.results]
            changed = apply_feedback(doc, req.rating, marks, datetime.now(UTC))
            try:
                self.client.update(
                    index=self.index,
                    id=hit["_id"],
                    body={"doc": changed},
                    params={"refresh": "true", "if_seq_no": hit["_seq_no"], "if_primary_term": hit["_primary_term"]},
                )
            except ConflictError:
                continue
            return answer_of({**doc, **changed})
        raise Conflict(f"recall {recall_id}: too many concurrent feedback writes; send it again")

    # ---------------------------------------------------------------- reading
    def summary(self, tenant_id: str, days: int, scope: UserScope | None = None) -> FeedbackSummary:
        own = scope.own() if scope is not None else None
        r = self.client.search(index=self.index, body=queries.summary_body(tenant_id, days, own))
        worst = self.client.search(index=self.index, body=queries.worst_body(tenant_id, days, WORST_QUERIES, own))
        rows = [WorstQuery(**h["_source"]) for h in worst["hits"]["hits"]]
        return FeedbackSummary(days=days, worst=rows, **parse_summary(r["aggregations"]))

    def stored_ratings(self) -> tuple[int, float]:
        """(count, sum) of the ratings kept, every tenant together (the metrics' scrape)."""
        kept = {"range": {"expires_at": {"gt": "now"}}}
        body = {"size": 0, "query": kept, "aggs": {"r": {"stats": {"field": "rating"}}}}
        agg = self.client.search(index=self.index, body=body)["aggregations"]["r"]
        return int(agg.get("count") or 0), float(agg.get("sum") or 0.0)

    def judged(self, tenant_id: str, page: int = 500) -> list[dict[str, Any]]:
        """Every kept record of the tenant with at least one result marked (the lab's labelled set)."""
        out: list[dict[str, Any]] = []
        after: list[Any] | None = None
        while True:
            body = queries.judged_body(tenant_id, page, after)
            hits = self.client.search(index=self.index, body=body)["hits"]["hits"]
            out += [h["_source"] for h in hits]
            if len(hits) < page:
                return out
            after = hits[-1]["sort"]

    # ---------------------------------------------------------------- forgetting
    def forget_memories(self, tenant_id: str, memory_ids: list[str] | None) -> int:
        """Memories forgotten: their results and marks leave every record of the tenant that showed
        them; ``None`` (the whole tenant forgotten): every record of the tenant goes. Returns the
        records changed or deleted."""
        params = {"refresh": "true", "conflicts": "proceed"}
        if memory_ids is None:
            body = {"query": tenant_term(tenant_id)}
            return int(self.client.delete_by_query(index=self.index, body=body, params=params).get("deleted", 0))
        if not memory_ids:
            return 0
        r = self.client.update_by_query(index=self.index, body=queries.scrub_body(tenant_id, memory_ids), params=params)
        return int(r.get("updated", 0))

    def forget_owner(self, tenant_id: str, scope: UserScope) -> int:
        """A user (or agent) forgotten: the records of the recalls made for them go (their
        questions with them). Returns the records deleted."""
        if scope.everyone:
            raise ValueError("forget_owner needs a user or an agent")  # never the whole tenant by mistake
        body = {"query": {"bool": {"filter": owned(tenant_id, scope.own())}}}
        params = {"refresh": "true", "conflicts": "proceed"}
        return int(self.client.delete_by_query(index=self.index, body=body, params=params).get("deleted", 0))

    def purge_expired(self) -> int:
        body = {"query": {"range": {"expires_at": {"lte": "now"}}}}
        r = self.client.delete_by_query(index=self.index, body=body, params={"conflicts": "proceed"})
        return int(r.get("deleted", 0))


def answer_of(doc: dict[str, Any]) -> FeedbackAnswer:
    return FeedbackAnswer(
        recall_id=doc["recall_id"],
        rating=doc.get("rating"),
        results=[MarkOut(**m) for m in doc.get("marks") or []],
        updated_at=doc.get("updated_at") or doc["at"],
        expires_at=doc["expires_at"],
    )
