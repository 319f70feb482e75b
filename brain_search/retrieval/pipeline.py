"""A recall, stage by stage: ``Retriever.recall`` = plan → search → score → respond.

The plan (``Retriever.plan``, ``plan.py``) reads the question (``intent/``, ``question/``: its Z,
time words, theme) and builds the one ``_msearch`` (``engine/``: BM25 + kNN under the tenant's
filters); the search sends it and takes each hit's current version (``engine/``); the score stage
ranks the candidates, pure (``score/``); respond turns the ranked whole into the response
(``respond.py``, conversations by ``context.py``). Every result carries both real scores from
that one round trip (no fill-in search; ``engine/queries.py`` says how).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any, Protocol

import numpy as np
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.errors import StoreUnavailable
from brain_search.graph.store import GraphStore
from brain_search.models import RecallRequest, RecallResponse
from brain_search.retrieval.context import recall_conversations
from brain_search.retrieval.engine import queries
from brain_search.retrieval.engine.candidates import Candidate, legs_candidates
from brain_search.retrieval.engine.count_ahead import CountAhead, PlanCounts
from brain_search.retrieval.engine.search import Answers, Wire
from brain_search.retrieval.engine.sources import fill_sources
from brain_search.retrieval.engine.supersede import current_versions
from brain_search.retrieval.engine.tenant_stats import StatsCache, TenantStats, words_to_weigh
from brain_search.retrieval.intent import IntentDetector
from brain_search.retrieval.intent.model import make_intent_detector
from brain_search.retrieval.plan import Searched, SearchPlan, fetch_size, with_bodies
from brain_search.retrieval.question.events import recall_period
from brain_search.retrieval.question.presets import apply_overrides
from brain_search.retrieval.question.theme import named_theme
from brain_search.retrieval.question.timewords import time_scope, without_words
from brain_search.retrieval.respond import Clock, Shown, analysis, response, shown
from brain_search.retrieval.score.ranking import RankingParams
from brain_search.retrieval.score.scoring import check_scores, kept_results, score
from brain_search.retrieval.score.tuning import Tuning, encoder_name
from brain_search.retrieval.score.zaxis import ZCalibration
from brain_search.retrieval.text import query_terms
from brain_search.retrieval.zscale import THEME_Z
from brain_search.store.cache_budget import cache_budgets
from brain_search.store.client import counted_requests
from brain_search.store.placement import placement_for
from brain_search.store.scope import TenantScope, UserScope


class QueryEncoder(Protocol):
    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        """The query's vector (a cache keeps it per tenant: no cross-tenant timing signal)."""
        ...


class Retriever:
    def __init__(
        self,
        client: OpenSearch,
        settings: Settings,
        encoder: QueryEncoder,
        graph: GraphStore | None = None,
        *,
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
        self.tuning = Tuning(settings, ranking, calibration)
        self.stats_cache = StatsCache(cache_budgets(settings).tenant_stats)
        self.placement = placement_for(client, settings)  # the tenant's index: shared, or its own
        ahead = settings.count_ahead and settings.lexical_stats == "tenant"
        self.count_ahead = CountAhead(client, self.stats_cache, settings.opensearch_pool_size) if ahead else None
        self.wire = Wire(client, settings, self.stats_cache)
        self.search_type = self.wire.search_type

    # ------------------------------------------------------------------ public
    WARM_UP_QUERY = "what did we decide last week"

    def encoder_name(self, tenant_id: str | None = None) -> str:
        """The encoder the query vectors of ``tenant_id`` come from (``tuning.encoder_name``)."""
        return encoder_name(self.encoder, self.settings, tenant_id)

    @property
    def ranking(self) -> RankingParams:
        """The ranking of the shared index's encoder (``ranking_of``)."""
        return self.ranking_of(None)

    def ranking_of(self, tenant_id: str | None) -> RankingParams:
        """The ranking given, else the one learned for the encoder of ``tenant_id``'s index."""
        return self.tuning.ranking(self.encoder_name(tenant_id))

    @property
    def calibration(self) -> ZCalibration:
        """The Z calibration of the shared index's encoder (``calibration_of``)."""
        return self.calibration_of(None)

    def calibration_of(self, tenant_id: str | None) -> ZCalibration:
        """The Z calibration given, else the settings' for the encoder of ``tenant_id``'s index."""
        return self.tuning.calibration(self.encoder_name(tenant_id))

    def warm_up(self) -> None:
        """Load now what the first recall would load lazily: the query model's first run, the
        intent model's and dateparser's language data (about 0.6 s here, all of it paid by
        whichever user's recall came first with a time word). No engine call."""
        vector = self.encoder.encode_query(self.WARM_UP_QUERY, "")
        self.detector.analyze(self.WARM_UP_QUERY, vector)
        after = timedelta(days=self.settings.time_words_after_days)
        time_scope(self.WARM_UP_QUERY, (), None, None, reference_time=None, read_words=True, after=after)

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
        plan = found.plan
        versions = current_versions(
            self.client,
            plan.scope,
            found.candidates,
            superseders=found.superseders,
            successors=partial(self._successors, plan),
            include_superseded=req.include_superseded,
        )
        t_search = time.perf_counter()
        check_scores(versions.marked)

        formula = req.z_formula or self.settings.z_formula
        ranked = score(
            plan.intent,
            plan.terms,
            list(versions.marked.values()),
            ranking=ranking,
            calibration=calibration,
            formula=formula,
            term_idf=plan.term_idf,
            query=req.query,
            name_counts=plan.name_counts,
            newer=versions.newer,
            drop=not req.include_superseded,
            theme=bool(plan.theme),
            chosen_z=plan.source != "auto",
        )
        t_rank = time.perf_counter()
        kept = kept_results(ranked, req.strict, req.min_relevance, req.limit)
        results, tiers = shown(ranked, kept, req)
        t_tiers = time.perf_counter()
        payload = partial(self.msearch_payload, plan.scope)  # one more round trip only when asked
        conversations = recall_conversations(self.client, payload, plan, ranked, req=req, superseders=found.superseders)
        t_context = t_tiers if conversations is None else time.perf_counter()
        shows = Shown(results, tiers, conversations, len(versions.shown), found.missing)
        clock = Clock(t_search0, t_search, t_rank, t_tiers, t_context)
        return response(shows, analysis(plan, ranked, kept, formula, calibration=calibration), plan, clock)

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
        when = recall_period(self.client, scope, req, intent.phrases, after=after)
        if when is not None and when.words:  # no memory says "last week" of its own day
            intent = replace(intent, lexical_query=without_words(intent.lexical_query, tuple(when.words)))
        t_intent = time.perf_counter()

        node_paths = self._node_paths(tenant_id, req)
        theme: tuple[str, ...] = ()
        if intent.target_z >= THEME_Z and source == "auto" and self.graph is not None:  # broad: the nodes it names
            # within the scope given (a node given as scope is never the theme by itself)
            theme = named_theme(self.graph, tenant_id, intent.lexical_query, node_paths)
            node_paths = list(theme) or node_paths
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
        plan = with_bodies(plan, self.settings)
        return replace(plan, plan_ms=(time.perf_counter() - t_intent) * 1000.0)

    def _successors(self, plan: SearchPlan, memory_ids: set[str]) -> dict[str, Candidate]:
        """The recall's sub-searches over ``memory_ids`` only (the current versions of replaced
        candidates that the search did not return), scored as the recall scores its own: one more
        round trip, only when a candidate was replaced by a memory outside the candidates."""
        if not memory_ids:
            return {}
        only = {"terms": {"memory_id": sorted(memory_ids)}}
        narrow = with_bodies(replace(plan, filters=[*plan.filters, only], counted=()), self.settings)
        narrow = replace(narrow, bodies=narrow.bodies[:-1])  # the superseders are known already
        hits = [r["hits"]["hits"] for r in self._msearch(narrow).responses]
        fill_sources(self.client, plan.scope, hits)
        return legs_candidates(hits, narrow.has_lexical, len(memory_ids))

    def msearch_payload(self, scope: TenantScope, bodies: list[dict[str, Any]]) -> str:
        """The NDJSON body of one ``_msearch`` over the memories alias (``Wire.payload``)."""
        return self.wire.payload(scope, bodies)

    def _msearch(self, plan: SearchPlan, allow_partial: bool = False) -> Answers:
        """The plan's one ``_msearch`` (``Wire.send``)."""
        payload, n = self.plan_payload(plan), len(plan.bodies)
        return self.wire.send(plan.scope, payload, bodies=n, counted=plan.counted, allow_partial=allow_partial)

    def plan_payload(self, plan: SearchPlan) -> str:
        """The recall's one ``_msearch``: the plan's sub-searches, then the tenant's counts when
        they ride along (``SearchPlan.counted``)."""
        return Wire.with_counts(self.msearch_payload(plan.scope, plan.bodies), plan.scope, plan.counted)

    # ------------------------------------------------------------------ stages
    def _node_paths(self, tenant_id: str, req: RecallRequest) -> list[str]:
        if not req.nodes:
            return []
        if self.graph is None:
            raise StoreUnavailable("node filters need the knowledge graph store")
        return self.graph.expand_scope(tenant_id, req.nodes, req.expand_related)

    def search(self, plan: SearchPlan, allow_partial: bool = False) -> Searched:
        """The search stage: the plan's one round trip. The scored candidates, what was missing
        when partial results were allowed, the tenant's superseding memories (those of the shards
        that answered) and the plan they came from: when the count that rode along weighs a word
        otherwise than the search did (the tenant's memories changed since), the search runs again
        with the fresh one, so the answer never depends on what this process counted before."""
        answers = self._msearch(plan, allow_partial)
        fresh = answers.fresh
        if fresh is not None and plan.stats is not None and not fresh.agrees(plan.stats, plan.counted):
            plan = with_bodies(replace(plan, stats=fresh, counted=()), self.settings)
            answers = self._msearch(plan, allow_partial)
        elif fresh is not None:  # the same weights: the same search; the counts read on are the fresh ones
            plan = replace(plan, stats=fresh)
        superseders = answers.responses[-1]
        hits = [r["hits"]["hits"] for r in answers.responses[:-1]]
        fill_sources(self.client, plan.scope, hits)  # in place: the lists ``hits`` holds
        return Searched(legs_candidates(hits, plan.has_lexical, plan.k), answers.missing, superseders, plan)
