"""Brain's own recall as evaluation systems: ``Retriever.recall`` called in-process (no HTTP).

- "Brain Z-naive (z_value=0.5)": every query ranked at the balanced target, the spec's A/B
  control;
- "Brain Z-aware (focus auto)": intent detection picks the target per query; time words ("in
  July 2022", "last week") are read against the query's own time where it has one (RealMem: its
  session's), else the conversation's last session (LoCoMo);
- "Brain Z-aware, time words off": the same, reading no time words (where the data has dates).

Query vectors come from the evaluation's embedding cache, so both systems see the same vectors
as the baselines; ``brain-search eval --query-int8`` gives them the API's int8 query encoder
instead (the baselines keep fp32), which is how the int8 model's cost in quality is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.encoders.queries import QueryCache
from brain_search.models import Focus, RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.score.ranking import RankingParams
from brain_search.store.cache_budget import cache_budgets

Z_NAIVE = "Brain Z-naive (z_value=0.5)"
Z_AWARE = "Brain Z-aware (focus auto)"
Z_AWARE_NO_TIME = "Brain Z-aware, time words off"


@dataclass
class BrainSystem:
    retriever: Retriever
    name: str
    z_value: float | None = None
    focus: Focus = Focus.auto
    detected: dict[str, str] = field(default_factory=dict)
    """query → the intent tier the pipeline reported (for the per-tier A/B table)."""
    reference_times: dict[str, datetime] = field(default_factory=dict)
    """tenant → what its queries' time words are read against (LoCoMo: the last session's date)"""
    time_words: bool = True

    def search(
        self,
        tenant_id: str,
        query: str,
        limit: int,
        *,
        until: datetime | None = None,
        reference_time: datetime | None = None,
    ) -> list[str]:
        """``until``: the recall's explicit upper time bound (the query's pool); ``reference_time``:
        the query's own time for its time words, else the tenant's (``reference_times``). Without
        either, no time words are read (data without dates). NB the service lets an explicit
        ``until`` win over time words (``timewords.time_scope``): a bounded query reads none."""
        ref = reference_time or self.reference_times.get(tenant_id)
        req = RecallRequest(
            query=query,
            limit=limit,
            z_value=self.z_value,
            focus=self.focus,
            until=until,
            reference_time=ref,
            time_words=self.time_words and ref is not None,
        )
        # the learned ranking for both, so Z-naive differs from Z-aware only by its target
        resp = self.retriever.recall(tenant_id, req, ranking=self.retriever.ranking)
        self.detected[query] = resp.query_analysis.detected_intent.value
        return [r.id for r in resp.results]


def brain_systems(
    client: OpenSearch,
    settings: Settings,
    embedder: Embedder,
    ranking: RankingParams | None = None,
    query_embedder: Embedder | None = None,
    reference_times: dict[str, datetime] | None = None,
) -> list[BrainSystem]:
    """Z-naive and Z-aware over the index of ``settings`` (one shared retriever); queries are
    encoded by ``query_embedder`` where given, else by ``embedder``. Time words are read only for
    tenants in ``reference_times`` (data without dates, like SciFact, has no time to scope)."""
    queries = query_embedder or embedder
    retriever = Retriever(client, settings, QueryCache(queries, cache_budgets(settings).query_vectors), ranking=ranking)
    refs = dict(reference_times or {})
    systems = [
        BrainSystem(retriever, Z_NAIVE, z_value=0.5, reference_times=refs),
        BrainSystem(retriever, Z_AWARE, reference_times=refs),
    ]
    if refs:  # data with dates: the same recall without reading time words, for the A/B
        systems.append(BrainSystem(retriever, Z_AWARE_NO_TIME, reference_times=refs, time_words=False))
    return systems
