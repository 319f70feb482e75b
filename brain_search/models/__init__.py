"""The recall's request (spec 4.1) and response (spec 4.2), named for the service. Their one
definition is the client package's (``brain_search_client.models.recall``), which the API, the MCP
tools, the CLI and every client share; a memory's schema is ``brain_search_client.models.memory``
and the types every door takes ``brain_search_client.models.inputs``."""

from __future__ import annotations

from brain_search_client.models.recall import (
    MAX_CONTEXT,
    MAX_LIMIT,
    MAX_NODE_CHARS,
    MAX_NODES,
    MAX_PHRASES,
    MAX_QUERY_CHARS,
    ConversationContext,
    ConversationTurn,
    Focus,
    Intent,
    MatchKind,
    MemoryResult,
    NodeRef,
    PartialResults,
    QueryAnalysis,
    RecallRequest,
    RecallResponse,
    ResultMetadata,
    Scores,
    Tiers,
    TimeRange,
    Timings,
    ZFormula,
)

__all__ = [
    "MAX_CONTEXT",
    "MAX_LIMIT",
    "MAX_NODES",
    "MAX_NODE_CHARS",
    "MAX_PHRASES",
    "MAX_QUERY_CHARS",
    "ConversationContext",
    "ConversationTurn",
    "Focus",
    "Intent",
    "MatchKind",
    "MemoryResult",
    "NodeRef",
    "PartialResults",
    "QueryAnalysis",
    "RecallRequest",
    "RecallResponse",
    "ResultMetadata",
    "Scores",
    "Tiers",
    "TimeRange",
    "Timings",
    "ZFormula",
]
