"""The respond stage of a recall (``Retriever.recall``'s last): the ranked candidates → the results
and tiers the response shows (``shown``), then the ``RecallResponse`` with how the question was
read and each stage's time (``response``). Nothing here scores or searches."""

from __future__ import annotations

from dataclasses import dataclass

from brain_search.models import (
    ConversationContext,
    MemoryResult,
    PartialResults,
    QueryAnalysis,
    RecallRequest,
    RecallResponse,
    Tiers,
    Timings,
    ZFormula,
)
from brain_search.retrieval.engine.candidates import Ranked
from brain_search.retrieval.plan import SearchPlan
from brain_search.retrieval.score.scoring import Kept
from brain_search.retrieval.score.tiers import select
from brain_search.retrieval.score.zaxis import ZCalibration

MS = 1000.0


@dataclass(frozen=True)
class Clock:
    """``time.perf_counter`` readings (s) at the stages' edges after the plan: the search's start
    and end, the end of the ranking, of the tiers and of the conversations."""

    search0: float
    search: float
    rank: float
    tiers: float
    context: float

    def timings(self, plan: SearchPlan) -> Timings:
        """Each stage's time (ms), the plan's own from the plan."""
        return Timings(
            intent_ms=plan.intent_ms,
            embed_ms=plan.embed_ms,
            plan_ms=plan.plan_ms,
            search_ms=(self.search - self.search0) * MS,
            rank_ms=(self.rank - self.search) * MS,
            tiers_ms=(self.tiers - self.rank) * MS,
            context_ms=(self.context - self.tiers) * MS,
            total_ms=plan.intent_ms + plan.embed_ms + plan.plan_ms + (self.context - self.search0) * MS,
        )


def shown(ranked: Ranked, kept: Kept, req: RecallRequest) -> tuple[list[MemoryResult], Tiers | None]:
    """The results the response shows, in order, and its tiers when asked (``tiered``)."""
    # result models only for what the response shows (building one per candidate cost ~2 ms)
    results = [ranked.result(i) for i in kept.order]
    tiers = None
    if req.tiered:
        picked = select(ranked.order, ranked.zs, ranked.kinds, ranked.shown, per_tier=req.limit)
        tiers = Tiers(**{name: [ranked.result(i) for i in idx] for name, idx in picked.items()})
    return results, tiers


def analysis(
    plan: SearchPlan, ranked: Ranked, kept: Kept, formula: ZFormula, *, calibration: ZCalibration
) -> QueryAnalysis:
    """How the question was read (the plan) and what matched (the ranking)."""
    intent = plan.intent
    return QueryAnalysis(
        detected_intent=intent.detected_intent,
        target_z=intent.target_z,
        z_tolerance=intent.z_tolerance,
        confidence=intent.confidence,
        cues=list(intent.cues),
        source=plan.source,
        lexical_query=intent.lexical_query,
        phrases=list(intent.phrases),
        z_formula=formula,
        best_match=round(max(ranked.strength, default=0.0), 6),
        nothing_matched=not any(ranked.shown),
        floor=calibration.floor,
        theme=list(plan.theme),
        withheld=kept.withheld,
        matched=kept.matched,
        withheld_matches=kept.withheld_matches,
        time_range=plan.time_range,
    )


@dataclass(frozen=True)
class Shown:
    """What a recall returns, before its timings (``response``)."""

    results: list[MemoryResult]
    tiers: Tiers | None
    conversations: list[ConversationContext] | None
    candidates: int
    """the candidates the recall ranked (superseded ones left out unless asked for)"""
    missing: PartialResults | None


def response(shows: Shown, query: QueryAnalysis, plan: SearchPlan, clock: Clock) -> RecallResponse:
    """The recall's response."""
    return RecallResponse(
        results=shows.results,
        tiers=shows.tiers,
        query_analysis=query,
        timings=clock.timings(plan),
        candidates=shows.candidates,
        partial=shows.missing,
        conversations=shows.conversations,
    )
