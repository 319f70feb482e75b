"""Framework retrievers over recall, each an optional extra of the client (the core client never
imports them): ``langchain`` (``pip install "brain-search-client[langchain]"``) and
``llamaindex`` (``pip install "brain-search-client[llamaindex]"``). Both recall with ``strict``
on by default (only memories that clear the relevance floor: none when nothing matched) and put
the scores and Z in each document's metadata (``metadata``)."""

from __future__ import annotations

from typing import Any

from brain_search_client.models.recall import MemoryResult


def metadata(result: MemoryResult) -> dict[str, Any]:
    """What a retrieved document carries beside its text: the memory's id, its scores and Z, its
    node, and its own metadata (times as ISO text, so every framework can store it)."""
    meta = result.metadata.model_dump(mode="json", exclude_none=True)
    return {
        "memory_id": result.memory_id,
        "relevance": result.scores.relevance,
        "z_position": result.scores.z_position,
        "lexical": result.scores.lexical,
        "semantic": result.scores.semantic,
        "match_kind": result.match_kind.value,
        "clears_floor": result.scores.clears_floor,
        "node_id": result.node.id,
        "node": result.node.label,
        **meta,
    }
