"""The keyword arguments the client's methods take, typed once (``**fields: Unpack[...]``), each
the fields of a shared request model (``tests/client``: they stay equal)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypedDict


class MemoryAbout(TypedDict, total=False):
    """What an edit takes beside the text (``models.memory.MemoryAbout``)."""

    node_id: str
    timestamp: datetime | str
    source: str
    conversation_id: str
    metadata: dict[str, Any]
    supersedes: Sequence[str]
    valid_until: datetime | str


class MemoryFields(MemoryAbout, total=False):
    """A memory's fields beside its text (``models.memory.MemoryGiven``)."""

    memory_id: str
    user_id: str
    agent_id: str


class MemoryChanges(MemoryAbout, total=False):
    """A PATCH's fields (``models.ingest.MemoryPatch``): ``content`` re-embeds."""

    content: str
    create_nodes: bool


class ReplaceFields(MemoryAbout, total=False):
    """A PUT's fields beside the text (``models.ingest.MemoryReplace``): those not given are cleared."""

    create_nodes: bool


class ReadScope(TypedDict, total=False):
    """Whose memories a read sees: a user's (``include_shared``: and the organisation's shared
    ones), an agent's; none: the whole tenant's (an organisation's key)."""

    user_id: str
    agent_id: str
    include_shared: bool


class RecallOptions(TypedDict, total=False):
    """``recall``'s options beside the query (``models.recall.RecallRequest``)."""

    focus: str
    z_value: float
    nodes: Sequence[str]
    limit: int
    tiered: bool
    expand_related: int
    since: datetime | str
    until: datetime | str
    reference_time: datetime | str
    time_words: bool
    z_formula: str
    include_superseded: bool
    allow_partial: bool
    strict: bool
    min_relevance: float
    context: int
    user_id: str
    agent_id: str
    include_shared: bool
