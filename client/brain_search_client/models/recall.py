"""Typed models at the edges: the recall request (spec 4.1) and response (spec 4.2)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

from brain_search_client.models.inputs import EngineTime, EngineUntil, Text
from brain_search_client.models.memory import OwnerId

MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100
MAX_NODES = 100  # distinct node filters per recall
MAX_NODE_CHARS = 512
MAX_PHRASES = 16  # quoted phrases per query (each is a phrase clause in both sub-searches)
MAX_CONTEXT = 5  # turns each side of a conversation's best hit


class Focus(StrEnum):
    """Z-axis presets; ``auto`` means intent detection."""

    auto = "auto"
    exact = "exact"
    precise = "precise"
    balanced = "balanced"
    conceptual = "conceptual"
    broad = "broad"


class Intent(StrEnum):
    exact = "exact"
    precise = "precise"
    balanced = "balanced"
    conceptual = "conceptual"
    broad = "broad"


class ZFormula(StrEnum):
    """How a result's Z position is computed."""

    calibrated = "calibrated"
    """by the kind of match (``brain_search/retrieval/score/zaxis.py``): what the spec's Z means"""
    spec = "spec"
    """the spec's literal ``semantic / (lexical + semantic)`` (section 3.1), for comparison"""


class MatchKind(StrEnum):
    """How a memory matches the query (what sets its calibrated Z)."""

    phrase = "phrase"
    """holds the quoted phrase (or the whole cue-stripped query) word for word: Exact"""
    words = "words"
    """holds every content word of the query literally, close together: Exact"""
    terms = "terms"
    """holds at least 45 % of the query's terms, each weighted by its idf over the tenant's
    memories (a rare name or number counts more than a common word): Precise"""
    meaning = "meaning"
    """mostly other words; Z by closeness in meaning: 0.5–1"""


class RecallRequest(BaseModel):
    """Exactly the MCP parameters of spec 4.1, plus optional X-axis refinements."""

    model_config = ConfigDict(extra="forbid")

    query: Text = Field(..., description="Natural language query", min_length=1, max_length=MAX_QUERY_CHARS)
    focus: Focus = Field(Focus.auto, description="Z-axis targeting preset (auto = intent detection)")
    z_value: float | None = Field(None, ge=0.0, le=1.0, description="Explicit Z-axis target (overrides focus)")
    nodes: list[Text] | None = Field(
        None, description="X-axis filter: Knowledge Graph node ids or label paths (each includes its subtree)"
    )
    limit: int = Field(10, ge=1, le=MAX_LIMIT, description="Maximum results to return")
    tiered: bool = Field(False, description="Return results grouped by Z-tier")
    expand_related: int = Field(0, ge=0, le=3, description="Also search nodes related to `nodes`, to this depth")
    since: EngineTime | None = Field(None, description="Only memories at or after this time")
    until: EngineUntil | None = Field(
        None, description="Only memories at or before this time (a date alone: to the end of that day)"
    )
    reference_time: EngineTime | None = Field(
        None, description="what 'last week', 'yesterday', 'in January' are relative to (default: now)"
    )
    time_words: bool = Field(
        False,
        description="read time words in the query as since/until (they leave the lexical query); "
        "within an explicit since/until when the request has one. Off by default: as a filter they "
        "cost recall on the held-out conversations (docs/recall.md, 'Time in words')",
    )
    z_formula: ZFormula | None = Field(
        None, description="calibrated (default: Z by kind of match) or spec (semantic / (lexical + semantic))"
    )
    include_superseded: bool = Field(
        False,
        description="also return memories a later one supersedes or whose valid_until has passed (marked)",
    )
    allow_partial: bool = Field(
        False,
        description="when some shards do not answer, return what the others found (marked `partial`) instead of a 503",
    )
    strict: bool = Field(
        False,
        description="return only memories that clear the relevance floor (exact matches, or a match strength at or "
        "above it): fewer than `limit`, or none, when fewer match. The MCP tool asks for it by default",
    )
    min_relevance: float | None = Field(
        None, ge=0.0, le=1.0, description="return only results whose calibrated `relevance` is at least this"
    )
    context: int | None = Field(
        None,
        ge=0,
        le=MAX_CONTEXT,
        description="conversation context: the response lists the conversations of the hits (`conversations`), "
        "each with this many turns either side of its best hit; 0: none. Unset: 2 when the query asks for a "
        "conversation ('that conversation about', 'what did we discuss'), else none",
    )
    user_id: OwnerId | None = Field(
        None,
        description="only this user's memories (a user's key: its user, always). Unset with an organisation key: "
        "every memory of the tenant",
    )
    agent_id: OwnerId | None = Field(None, description="only this agent's memories")
    include_shared: bool = Field(
        False,
        description="with user_id: also the organisation's shared memories (those with no user_id; with agent_id, "
        "those of that agent or of none)",
    )

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("query must contain non-whitespace text")
        return v

    @field_validator("nodes")
    @classmethod
    def _nodes_bounded(cls, v: list[str] | None) -> list[str] | None:
        """De-duplicated (order kept), then at most ``MAX_NODES`` of at most ``MAX_NODE_CHARS``
        each: a recall's cost must not grow with a client's repetition."""
        if v is None:
            return None
        distinct = list(dict.fromkeys(v))
        if len(distinct) > MAX_NODES:
            raise ValueError(f"at most {MAX_NODES} distinct nodes per recall (got {len(distinct)})")
        if any(len(n) > MAX_NODE_CHARS for n in distinct):
            raise ValueError(f"a node id or label is at most {MAX_NODE_CHARS} characters")
        return distinct


class NodeRef(BaseModel):
    id: str | None
    label: str | None


class Scores(BaseModel):
    lexical: float = Field(..., ge=0.0, le=1.0, description="lexical precision, 0–1")
    semantic: float = Field(..., ge=0.0, le=1.0, description="embedding similarity (cosine clamped), 0–1")
    z_position: float = Field(..., ge=0.0, le=1.0, description="how the memory matches: 0 exact … 1 broad")
    relevance: float = Field(
        ...,
        ge=0.0,
        le=1.0,
        description="calibrated relevance, 0–1: the share of results with this kind and strength of match that "
        "were relevant on the evaluation's dev questions (a result below the relevance floor reads low)",
    )
    rank: float = Field(
        0.0, description="the ranking score the order follows (z_relevance, blended with its node's best candidate)"
    )
    match: float = Field(
        0.0, ge=0.0, le=1.0, description="match strength, 0–1: tiers show only memories above the relevance floor"
    )
    clears_floor: bool = Field(
        True, description="an exact match, or a match strength at or above the relevance floor (what `strict` keeps)"
    )


class ResultMetadata(BaseModel):
    timestamp: datetime | None = None
    source: str | None = None
    conversation_id: str | None = None
    user_id: str | None = Field(None, description="the user the memory belongs to (none: the organisation's)")
    agent_id: str | None = None
    extra: dict[str, Any] | None = None
    superseded_by: str | None = Field(None, description="the memory that supersedes this one (include_superseded)")
    valid_until: datetime | None = None


class MemoryResult(BaseModel):
    id: str = Field(..., description="the memory id (the spec's name; `memory_id` holds the same)")
    content: str
    node: NodeRef
    scores: Scores
    match_kind: MatchKind = Field(MatchKind.meaning, description="phrase | words | terms | meaning")
    metadata: ResultMetadata

    @computed_field(description="the memory id, as the memory routes name it (`GET /v1/memories/{memory_id}`)")
    def memory_id(self) -> str:
        return self.id


class ConversationTurn(BaseModel):
    id: str = Field(..., description="the memory id")
    content: str
    timestamp: datetime | None = None
    hit: bool = Field(False, description="one of the recall's candidates (it matched the query)")

    @computed_field(description="the memory id, as the memory routes name it")
    def memory_id(self) -> str:
        return self.id


class ConversationContext(BaseModel):
    """One conversation of a recall (a ``conversation_id`` within one node): its hits and the
    turns around the best of them."""

    conversation_id: str
    node: NodeRef
    score: float = Field(..., description="from its hits: the best one's relevance, plus 0.1 × each of the next 3")
    hits: list[str] = Field(..., description="its memories among the recall's candidates, best first")
    best_hit: str
    turns: list[ConversationTurn] = Field(
        default_factory=list, description="the best hit and the turns either side of it, in order (time, then id)"
    )
    turns_total: int = Field(0, description="turns of this conversation within the recall's scope")


class TimeRange(BaseModel):
    """The time scope a recall searched: from the request's since/until, or from its words."""

    since: datetime | None = None
    until: datetime | None = None
    source: str = Field(
        ...,
        description="request (explicit since/until) | words (read from the query) | event ('before the launch', "
        "dated by a memory that names it)",
    )
    words: list[str] = Field(default_factory=list, description="the time words read (they left the lexical query)")
    reference_time: datetime | None = Field(None, description="what the words were read against")


class QueryAnalysis(BaseModel):
    detected_intent: Intent
    target_z: float
    z_tolerance: float
    confidence: float
    cues: list[str] = Field(default_factory=list, description="the intent cues that fired")
    source: str = Field("auto", description="auto | focus | z_value: where the target came from")
    lexical_query: str = Field("", description="the query sent to BM25 (cue words removed)")
    phrases: list[str] = Field(default_factory=list, description="quoted phrases matched as phrases")
    z_formula: ZFormula = Field(ZFormula.calibrated, description="how the results' Z positions were computed")
    best_match: float = Field(0.0, ge=0.0, le=1.0, description="the strongest match strength among the candidates")
    nothing_matched: bool = Field(
        False, description="no memory cleared the relevance floor: the tiers are empty on purpose, not by failure"
    )
    floor: float = Field(0.0, ge=0.0, le=1.0, description="the relevance floor: the match strength a memory needs")
    theme: list[str] = Field(
        default_factory=list,
        description="a broad recall about nodes its query names (within `nodes` when given; a node given as "
        "scope is never the theme by itself): their paths; every memory under them counts as a match",
    )
    withheld: int = Field(
        0, ge=0, description="results left out because they do not clear the floor (`strict`) or `min_relevance`"
    )
    matched: int = Field(
        0,
        ge=0,
        description="memories among the ranked candidates that clear the relevance floor (what `strict` returns, "
        "up to `limit`); 0 exactly when `nothing_matched`",
    )
    withheld_matches: int = Field(
        0,
        ge=0,
        description="memories that match (clear the floor) and would be in the results but `min_relevance` left "
        "out: with empty results, > 0 means withheld by your threshold, not nothing matched",
    )
    time_range: TimeRange | None = Field(None, description="the time scope searched (none: all time)")


class Tiers(BaseModel):
    """Spec 3.4 boundaries: exact Z<0.3, precise 0.3–0.5, semantic 0.5–0.7, conceptual ≥0.7."""

    exact_matches: list[MemoryResult] = Field(default_factory=list)
    precise_matches: list[MemoryResult] = Field(default_factory=list)
    semantic_matches: list[MemoryResult] = Field(default_factory=list)
    conceptual_matches: list[MemoryResult] = Field(default_factory=list)


class Timings(BaseModel):
    """Per-stage wall time in milliseconds; the stages add up to ``total_ms``."""

    intent_ms: float = 0.0
    embed_ms: float = 0.0
    plan_ms: float = Field(
        0.0, description="scope, node filters, the tenant's counts when not yet known, the sub-search bodies"
    )
    search_ms: float = Field(
        0.0, description="the one `_msearch` (a second when the tenant's counts changed), superseded memories"
    )
    rank_ms: float = Field(0.0, description="scores (lexical, semantic, Z, relevance) and the order")
    tiers_ms: float = Field(0.0, description="the results shown and the tiered views")
    context_ms: float = Field(0.0, description="fetching the conversations' turns (0 without `conversations`)")
    total_ms: float = 0.0
    engine_requests: int = Field(
        0,
        description="requests this recall made to the engine: 1 at best; one more each when this API process had "
        "not yet counted some query word for the tenant (the counts come first), node filters read the knowledge "
        "graph, a time word names an event, the tenant's memories changed during the search (it runs again), or "
        "`conversations` were asked for",
    )


class PartialResults(BaseModel):
    """Set only when the caller allowed partial results and some shards did not answer."""

    shards_total: int
    shards_answered: int
    reason: str


class RecallResponse(BaseModel):
    results: list[MemoryResult]
    tiers: Tiers | None = None
    query_analysis: QueryAnalysis
    timings: Timings
    candidates: int = Field(0, description="distinct candidates scored before the cut")
    partial: PartialResults | None = Field(None, description="some shards did not answer (allow_partial)")
    recall_id: str | None = Field(
        None, description="this recall, for feedback (POST /v1/recall/{recall_id}/feedback) while it is kept"
    )
    conversations: list[ConversationContext] | None = Field(
        None, description="the hits grouped by conversation, best first, with their turns (`context`; none: off)"
    )
