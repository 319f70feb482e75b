"""The recall pipeline: intent → query vector → one `_msearch` (BM25 + kNN under the same
filters) → lexical precision, similarity, Z → Z-aware rank → tiers.

Every returned result carries both real scores from that one round trip: every hit's cosine comes
from the engine (a script field over the stored vector), and the kNN sub-search scores its hits
by the same BM25 clause (the HNSW top-k is a filter there), so a kNN hit that is not among the
BM25 hits still has its exact BM25 — no fill-in search. With several shards the searches use
``dfs_query_then_fetch`` so BM25 statistics are comparable across shards.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any, Protocol

import numpy as np
import orjson
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.base import ENCODERS
from brain_search.errors import StoreUnavailable
from brain_search.graph.store import GraphStore, minimal_cover
from brain_search.models import (
    PartialResults,
    QueryAnalysis,
    RecallRequest,
    RecallResponse,
    Tiers,
    Timings,
)
from brain_search.retrieval.context import recall_conversations
from brain_search.retrieval.engine import queries
from brain_search.retrieval.engine.candidates import Candidate, legs_candidates
from brain_search.retrieval.engine.count_ahead import CountAhead, PlanCounts
from brain_search.retrieval.engine.shards import complete
from brain_search.retrieval.engine.sources import fill_sources
from brain_search.retrieval.engine.supersede import newer_versions, without_superseded
from brain_search.retrieval.engine.tenant_stats import (
    StatsCache,
    TenantStats,
    counts_request,
    stats_from,
    stats_key,
    tenant_clause,
    words_to_weigh,
)
from brain_search.retrieval.intent import IntentDetector
from brain_search.retrieval.intent.model import make_intent_detector
from brain_search.retrieval.plan import TIERED_POOL, Searched, SearchPlan, fetch_size, request_vector
from brain_search.retrieval.question.events import event_scope
from brain_search.retrieval.question.presets import apply_overrides
from brain_search.retrieval.question.theme import theme_nodes
from brain_search.retrieval.question.timewords import time_scope, without_words
from brain_search.retrieval.score.ranking import RankingParams, ranking_for
from brain_search.retrieval.score.scoring import check_scores, floor_checks, floor_first, inherit, kept_results, rank
from brain_search.retrieval.score.tiers import select
from brain_search.retrieval.score.zaxis import ZCalibration
from brain_search.retrieval.text import query_terms
from brain_search.retrieval.zscale import THEME_Z
from brain_search.store.cache_budget import cache_budgets
from brain_search.store.client import counted_requests
from brain_search.store.placement import placement_for
from brain_search.store.scope import TenantScope, UserScope

__all__ = ["TIERED_POOL", "Retriever", "SearchPlan", "Searched", "fetch_size", "request_vector"]


class QueryEncoder(Protocol):
    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        """The query's vector (a cache keeps it per tenant: no cross-tenant timing signal)."""
        ...


THEME_NODES = 1000
"""the tenant's nodes a broad recall reads to find the ones its query names"""


class Retriever:
    def __init__(
        self,
        client: OpenSearch,
        settings: Settings,
        encoder: QueryEncoder,
        graph: GraphStore | None = None,
        detector: IntentDetector | None = None,
        ranking: RankingParams | None = None,
        calibration: ZCalibration | None = None,
    ) -> None:
        # detector, ranking and calibration: given (the lab's fits) or built here from the settings,
        # the one place that builds them (the service's composition root passes none)
        self.client = client
        self.settings = settings
        self.encoder = encoder
        self.graph = graph
        self.detector = detector or make_intent_detector(settings.intent_model, settings.embedding_model)
        self._ranking = ranking
        self._rankings: dict[str, RankingParams] = {}
        self._calibration = calibration
        self._calibrations: dict[str, ZCalibration] = {}
        self.stats_cache = StatsCache(cache_budgets(settings).tenant_stats)
        self.placement = placement_for(client, settings)  # the tenant's index: shared, or its own
        ahead = settings.count_ahead and settings.lexical_stats == "tenant"
        self.count_ahead = CountAhead(client, self.stats_cache, settings.opensearch_pool_size) if ahead else None
        # DFS gathers index statistics across shards; with the tenant's own (constant-score
        # clauses) nothing reads them, so the extra per-shard phase would be spent for nothing
        dfs = settings.shards > 1 and settings.lexical_stats == "index"
        self.search_type = "dfs_query_then_fetch" if dfs else "query_then_fetch"

    # ------------------------------------------------------------------ public
    WARM_UP_QUERY = "what did we decide last week"

    def encoder_name(self, tenant_id: str | None = None) -> str:
        """The encoder the query vectors of ``tenant_id`` come from: the one its index records
        where the encoder follows indices (store/following.py; the shared index's without a
        tenant), else the settings' (a lab embedder names itself otherwise)."""
        pick = getattr(self.encoder, "embedder_for", None)
        embedder = pick(tenant_id) if pick is not None else getattr(self.encoder, "embedder", None)
        name = getattr(embedder, "name", None)
        return name if name in ENCODERS else self.settings.embedding_model

    @property
    def ranking(self) -> RankingParams:
        """The ranking given, else the one learned for the shared index's encoder (``ranking_of``)."""
        return self.ranking_of(None)

    def ranking_of(self, tenant_id: str | None) -> RankingParams:
        """The ranking given, else the one learned for the encoder of ``tenant_id``'s index."""
        if self._ranking is not None:
            return self._ranking
        name = self.encoder_name(tenant_id)
        found = self._rankings.get(name)
        if found is None:
            found = self._rankings[name] = ranking_for(name, self.settings.node_lift)
        return found

    @property
    def calibration(self) -> ZCalibration:
        """The Z calibration of the shared index's encoder (``calibration_of``)."""
        return self.calibration_of(None)

    def calibration_of(self, tenant_id: str | None) -> ZCalibration:
        """The Z calibration given, else the settings' for the encoder of ``tenant_id``'s index
        (cosines are the encoder's own: its fitted values, ``EncoderInfo``, unless the settings
        name them)."""
        if self._calibration is not None:
            return self._calibration
        name = self.encoder_name(tenant_id)
        found = self._calibrations.get(name)
        if found is None:
            found = ZCalibration.from_settings(self.settings.model_copy(update={"embedding_model": name}))
            self._calibrations[name] = found
        return found

    def warm_up(self) -> None:
        """Load now what the first recall would load lazily: the query model's first run, the
        intent model's and dateparser's language data (about 0.6 s here, all of it paid by
        whichever user's recall came first with a time word). No engine call."""
        vector = self.encoder.encode_query(self.WARM_UP_QUERY, "")
        self.detector.analyze(self.WARM_UP_QUERY, vector)
        after = timedelta(days=self.settings.time_words_after_days)
        time_scope(self.WARM_UP_QUERY, (), None, None, None, True, after)

    def close(self) -> None:  # the threads that count ahead (the client is the caller's)
        if self.count_ahead is not None:
            self.count_ahead.close()

    def recall(
        self,
        tenant_id: str,
        req: RecallRequest,
        ranking: RankingParams | None = None,
        exclude: Sequence[str] = (),
    ) -> RecallResponse:
        """``ranking``: used as given; by default the learned ranking, with the spec's Z-distance
        penalty when the target was chosen by the caller (``focus``/``z_value``). ``exclude``:
        memory ids the search leaves out (the lab's "answer removed" measurement)."""
        with counted_requests() as requests:
            resp = self._recall(tenant_id, req, ranking, exclude)
        resp.timings.engine_requests = requests[0]
        return resp

    def _recall(
        self, tenant_id: str, req: RecallRequest, ranking: RankingParams | None, exclude: Sequence[str]
    ) -> RecallResponse:
        plan = self.plan(tenant_id, req, exclude)
        calibration = self.calibration_of(tenant_id)  # the tenant's encoder's cosines
        if ranking is None:
            learned = self.ranking_of(tenant_id)
            ranking = learned if plan.source == "auto" else learned.for_explicit_z()
        t_search0 = time.perf_counter()
        found = self.search(plan, req.allow_partial)
        candidates, missing, superseders, plan = found.candidates, found.missing, found.superseders, found.plan
        ids = [c.source.get("memory_id", "") for c in candidates.values()]
        newer = newer_versions(self.client, plan.scope, ids, superseders)
        replaced = [c for c in candidates.values() if c.source.get("memory_id", "") in newer]
        if replaced:  # the current versions answer what their old ones answered: they must be candidates
            candidates = {**candidates, **self._successors(plan, set(newer.values()) - set(ids))}
        # the replaced ones are ranked too (marked), so that their current versions can take their place
        marked = without_superseded(candidates, newer, drop=False)
        current = marked if req.include_superseded else without_superseded(candidates, newer, drop=True)
        t_search = time.perf_counter()
        check_scores(candidates)

        formula = req.z_formula or self.settings.z_formula
        cands = list(marked.values())
        ranked = rank(plan.intent, plan.terms, cands, ranking, calibration, formula, plan.term_idf)
        if replaced:
            inherit(ranked, newer, drop=not req.include_superseded)
        floor_checks(ranked, req.query, plan.intent.cues, calibration, plan.name_counts)
        if plan.theme:  # every memory of the theme matches it, and reads at least what the floor reads
            ranked.shown = [True] * len(ranked.cands)
            ranked.calibrated = [max(c, calibration.at_floor) for c in ranked.calibrated]
        candidates = current
        t_rank = time.perf_counter()
        shown = ranked.shown
        if plan.source != "auto":  # a chosen Z moves the emphasis, never a non-match above a match
            ranked.order = floor_first(ranked.order, shown)
        kept = kept_results(ranked, req.strict, req.min_relevance, req.limit)
        # result models only for what the response shows (building one per candidate cost ~2 ms)
        results = [ranked.result(i) for i in kept.order]
        tiers = None
        if req.tiered:
            picked = select(ranked.order, ranked.zs, ranked.kinds, shown, req.limit)
            tiers = Tiers(**{name: [ranked.result(i) for i in idx] for name, idx in picked.items()})
        t_tiers = time.perf_counter()
        nothing = not any(shown)
        payload = partial(self.msearch_payload, plan.scope)  # one more round trip only when asked
        conversations = recall_conversations(self.client, payload, plan, ranked, req, superseders, nothing)
        t_context = t_tiers if conversations is None else time.perf_counter()

        intent = plan.intent
        ms = 1000.0
        return RecallResponse(
            results=results,
            tiers=tiers,
            query_analysis=QueryAnalysis(
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
                nothing_matched=nothing,
                floor=calibration.floor,
                theme=list(plan.theme),
                withheld=kept.withheld,
                matched=kept.matched,
                withheld_matches=kept.withheld_matches,
                time_range=plan.time_range,
            ),
            timings=Timings(
                intent_ms=plan.intent_ms,
                embed_ms=plan.embed_ms,
                plan_ms=plan.plan_ms,
                search_ms=(t_search - t_search0) * ms,
                rank_ms=(t_rank - t_search) * ms,
                tiers_ms=(t_tiers - t_rank) * ms,
                context_ms=(t_context - t_tiers) * ms,
                total_ms=plan.intent_ms + plan.embed_ms + plan.plan_ms + (t_context - t_search0) * ms,
            ),
            candidates=len(candidates),
            partial=missing,
            conversations=conversations,
        )

    def plan(self, tenant_id: str, req: RecallRequest, exclude: Sequence[str] = ()) -> SearchPlan:
        """Everything before the first engine round trip: intent, scope, query vector and the
        ``_msearch`` sub-search bodies. The load benchmark sends exactly these to the bare engine."""
        t0 = time.perf_counter()  # the vector first (the intent detector reads it); new words are counted meanwhile
        user = UserScope(req.user_id, req.agent_id, req.include_shared)
        scope = TenantScope.of(self.placement, tenant_id, user)  # the recall's one look-up of where the tenant lives
        counts = PlanCounts(self.client, scope, self.stats_cache, self.count_ahead)
        ahead = counts.start(req.query)
        vector = self.encoder.encode_query(req.query, tenant_id)
        t_embed = time.perf_counter()
        # the learned intent model reads vectors of the encoder the process started with only
        fits = self.encoder_name(tenant_id) == self.settings.embedding_model
        detected = self.detector.analyze(req.query, vector if fits else None)
        intent, source = apply_overrides(detected, req.focus, req.z_value)
        after = timedelta(days=self.settings.time_words_after_days)
        when = time_scope(req.query, intent.phrases, req.since, req.until, req.reference_time, req.time_words, after)
        if when is None and req.time_words and req.since is None and req.until is None:  # "before the launch"
            when = event_scope(self.client, scope, req.query, intent.phrases)
        if when is not None and when.words:  # no memory says "last week" of its own day
            intent = replace(intent, lexical_query=without_words(intent.lexical_query, tuple(when.words)))
        t_intent = time.perf_counter()

        node_paths = self._node_paths(tenant_id, req)
        theme: tuple[str, ...] = ()
        if intent.target_z >= THEME_Z and source == "auto" and self.graph is not None:  # broad: the nodes it names
            labels = [n.label for n in self.graph.list_nodes(tenant_id, limit=THEME_NODES)]
            named = minimal_cover(theme_nodes(labels, query_terms(intent.lexical_query), node_paths))
            if named:  # within the scope given (a node given as scope is never the theme by itself)
                node_paths, theme = named, tuple(named)
        since, until = (when.since, when.until) if when else (None, None)
        from_words = when is not None and when.source != "request"
        filters = scope.memories(node_paths, since, until, exclude_memories=exclude, keep_untimed=from_words)
        if not req.include_superseded:
            filters.append(queries.still_valid())

        k = fetch_size(req.limit, req.tiered, self.settings)
        terms = query_terms(intent.lexical_query)
        has_lexical = bool(intent.lexical_query.strip() or intent.phrases)
        stats: TenantStats | None = None
        riding: tuple[str, ...] = ()
        if has_lexical and self.settings.lexical_stats == "tenant":  # BM25 over the tenant's own statistics
            stats, riding = counts.of(words_to_weigh(terms, intent.phrases), ahead)
        plan = SearchPlan(
            scope=scope,
            intent=intent,
            source=source,
            filters=filters,
            vector=vector,
            terms=terms,
            k=k,
            has_lexical=has_lexical,
            bodies=[],
            intent_ms=(t_intent - t_embed) * 1000.0,
            embed_ms=(t_embed - t0) * 1000.0,
            time_range=when,
            stats=stats,
            counted=riding,
            theme=theme,
        )
        plan = self._with_bodies(plan)
        return replace(plan, plan_ms=(time.perf_counter() - t_intent) * 1000.0)

    def _with_bodies(self, plan: SearchPlan) -> SearchPlan:
        """The plan with its ``_msearch`` sub-search bodies, built from its statistics."""
        intent, terms, k, filters = plan.intent, plan.terms, plan.k, plan.filters
        vec = request_vector(plan.vector)
        lexical = tenant_clause(terms, intent.phrases, plan.stats) if plan.stats is not None else None
        shards = max(1, self.settings.shards)
        bodies = []
        if plan.has_lexical:
            bodies.append(queries.lexical_search(intent.lexical_query, intent.phrases, terms, filters, k, vec, lexical))
        # the search is not routed: every shard returns its own top k (cut to k by cosine later)
        bodies.append(
            queries.knn_search(
                vec,
                k,
                terms,
                intent.phrases,
                filters,
                self.settings.hnsw_ef_search,
                intent.lexical_query,
                k * shards,
                lexical,
            )
        )
        # last: newer_versions() reads it, so hiding superseded memories costs no round trip of its own
        bodies.append(queries.superseders(plan.scope, queries.SUPERSEDERS_SHOWN))
        return replace(plan, bodies=bodies)

    def _successors(self, plan: SearchPlan, memory_ids: set[str]) -> dict[str, Candidate]:
        """The recall's sub-searches over ``memory_ids`` only (the current versions of replaced
        candidates that the search did not return), scored as the recall scores its own: one more
        round trip, only when a candidate was replaced by a memory outside the candidates."""
        if not memory_ids:
            return {}
        only = {"terms": {"memory_id": sorted(memory_ids)}}
        narrow = self._with_bodies(replace(plan, filters=[*plan.filters, only], counted=()))
        narrow = replace(narrow, bodies=narrow.bodies[:-1])  # the superseders are known already
        responses, _, _ = self._msearch(narrow)
        hits = [r["hits"]["hits"] for r in responses]
        fill_sources(self.client, plan.scope, hits)
        return legs_candidates(hits, narrow.has_lexical, len(memory_ids))

    def msearch_payload(self, scope: TenantScope, bodies: list[dict[str, Any]]) -> str:
        """The NDJSON body of one ``_msearch`` over the memories alias.

        Routed to the tenant's shards (``routing=tenant``, as its documents are written): with
        the tenant's own BM25 (``lexical_stats="tenant"``, the default) no score reads a shard's
        statistics, so the shards that hold none of the tenant's memories have nothing to add and
        are not asked (with the chart's 12 primaries and a routing partition of 3, a recall
        touches 3 shards, not 12). With index statistics (``lexical_stats="index"``) the recall
        stays unrouted with a DFS phase: routed, the DFS phase would only see the tenant's
        shards, whose statistics mix in whichever tenants share them. Either way the same recall
        as on one shard (tests/integration/test_cluster.py).

        orjson, not json: the bodies carry the query vector three times and the standard
        encoder's float repr made this the largest Python cost of a recall (about 20× slower
        for 384 floats); the output parses back to the same floats."""
        routed = self.settings.lexical_stats == "tenant"
        header = orjson.dumps({"search_type": self.search_type, **(scope.params() if routed else {})})
        return b"".join(header + b"\n" + orjson.dumps(b) + b"\n" for b in bodies).decode()

    def plan_payload(self, plan: SearchPlan) -> str:
        """The recall's one ``_msearch``: the plan's sub-searches, then the tenant's counts when
        they ride along (``SearchPlan.counted``)."""
        payload = self.msearch_payload(plan.scope, plan.bodies)
        return payload + counts_request(plan.scope, plan.counted) if plan.counted else payload

    # ------------------------------------------------------------------ stages
    def _node_paths(self, tenant_id: str, req: RecallRequest) -> list[str]:
        if not req.nodes:
            return []
        if self.graph is None:
            raise StoreUnavailable("node filters need the knowledge graph store")
        return self.graph.expand_scope(tenant_id, req.nodes, req.expand_related)

    def _msearch(
        self, plan: SearchPlan, allow_partial: bool = False
    ) -> tuple[list[dict[str, Any]], PartialResults | None, TenantStats | None]:
        """The plan's sub-search answers (checked), what was missing, and the tenant's fresh
        count when it rode along (None otherwise)."""
        resp = self.client.msearch(body=self.plan_payload(plan), index=plan.scope.index)
        answers = resp["responses"]
        checked = [complete(r, allow_partial) for r in answers[: len(plan.bodies)]]
        missing = next((m for _, m in checked if m is not None), None)
        fresh = None
        if plan.counted:  # a lost tenant shard: the search said so above (503), or is marked partial
            fresh = stats_from(answers[len(plan.bodies)], plan.counted)
            self.stats_cache.put(stats_key(plan.scope), fresh)
        return [r for r, _ in checked], missing, fresh

    def search(self, plan: SearchPlan, allow_partial: bool = False) -> Searched:
        """The search stage: the plan's one round trip. The scored candidates, what was missing
        when partial results were allowed, the tenant's superseding memories (those of the shards
        that answered) and the plan they came from: when the count that rode along weighs a word
        otherwise than the search did (the tenant's memories changed since), the search runs again
        with the fresh one, so the answer never depends on what this process counted before."""
        responses, missing, fresh = self._msearch(plan, allow_partial)
        if fresh is not None and plan.stats is not None and not fresh.agrees(plan.stats, plan.counted):
            plan = self._with_bodies(replace(plan, stats=fresh, counted=()))
            responses, missing, _ = self._msearch(plan, allow_partial)
        elif fresh is not None:  # the same weights: the same search; the counts read on are the fresh ones
            plan = replace(plan, stats=fresh)
        superseders = responses[-1]
        hits = [r["hits"]["hits"] for r in responses[:-1]]
        fill_sources(self.client, plan.scope, hits)  # in place: the lists ``hits`` holds
        return Searched(legs_candidates(hits, plan.has_lexical, plan.k), missing, superseders, plan)
