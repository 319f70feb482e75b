"""Brain's own recall as evaluation systems: ``Retriever.recall`` called in-process (no HTTP).

- "Brain Z-naive (z_value=0.5)": every query ranked at the balanced target, the spec's A/B
  control;
- "Brain Z-aware (focus auto)": intent detection picks the target per query.

Query vectors come from the evaluation's embedding cache, so both systems see the same vectors
as the baselines; ``brain-search eval --query-int8`` gives them the API's int8 query encoder
instead (the baselines keep fp32), which is how the int8 model's cost in quality is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.embedding import Embedder, QueryCache
from brain_search.models import Focus, RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.ranking import RankingParams

Z_NAIVE = "Brain Z-naive (z_value=0.5)"
Z_AWARE = "Brain Z-aware (focus auto)"


@dataclass
class BrainSystem:
    retriever: Retriever
    name: str
    z_value: float | None = None
    focus: Focus = Focus.auto
    detected: dict[str, str] = field(default_factory=dict)
    """query → the intent tier the pipeline reported (for the per-tier A/B table)."""

    def search(self, tenant_id: str, query: str, limit: int) -> list[str]:
        req = RecallRequest(query=query, limit=limit, z_value=self.z_value, focus=self.focus)
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
) -> list[BrainSystem]:
    """Z-naive and Z-aware over the index of ``settings`` (one shared retriever); queries are
    encoded by ``query_embedder`` where given, else by ``embedder``."""
    queries = query_embedder or embedder
    retriever = Retriever(client, settings, QueryCache(queries, settings.query_cache_size), ranking=ranking)
    return [BrainSystem(retriever, Z_NAIVE, z_value=0.5), BrainSystem(retriever, Z_AWARE)]
