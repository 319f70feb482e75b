"""One memory's fields, declared once (issue 54, "One schema for a memory").

This file and ``index_templates/memories.json`` are the two places a memory's fields are named:

- ``MEMORY_FIELDS``: each field with its roles (given by a caller, shown by a recall, kept by an
  edit of the text, exported). The stored document (``store/documents.py``: what
  ``build_memory_doc`` writes, the view a recall reads), a recall's ``_source`` fallback
  (``retrieval/engine/queries.py`` ``RESULT_FIELDS``), what an edit of the text keeps (``ingest/edits.py``)
  and the export (``commands/memories.py``) derive their lists from it.
- The typed edges, each a pydantic base the doors and the queue extend without naming a field
  again: ``MemoryGiven`` (what a caller sends: ``ingest/models.py`` ``MemoryIn``; its
  ``MemoryAbout`` part is what a PUT and a PATCH take beside the text), ``MemoryQueued``
  (what a task carries: ``MemoryItem``) and ``MemoryStored`` (what a read answers: ``MemoryOut``).
  ``ingest/prepare.py`` copies a given memory into its task item field by field, and the worker
  passes an item's fields to ``build_memory_doc`` as they are, so a plain field added here flows
  from the request to the document with no other edit.

``tests/unit/test_memory_schema.py`` holds the edges, the template mapping and ``build_memory_doc``
to ``MEMORY_FIELDS``, and names anything that was missed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from brain_search_client.models.inputs import EngineTime, JsonObject, Text

MEMORY_ID_PATTERN = r"^[^\s\x00-\x1f\x7f]{1,256}$"
OWNER_ID_PATTERN = r"^[^\s/\x00-\x1f\x7f]{1,256}$"
"""a user or agent id: 1–256 characters, no whitespace, control character or '/' (it is a path
segment of ``/v1/users/{user_id}``)"""
OwnerId = Annotated[str, Field(pattern=OWNER_ID_PATTERN, min_length=1, max_length=256)]


@dataclass(frozen=True)
class MemoryField:
    name: str
    given: bool = False
    """a caller writes it (the API's bodies, MCP ``brain_remember``, the CLI's ingest and import)"""
    shown: bool = False
    """a recall shows it (the stored view, or ``_source`` for a memory stored before views)"""
    kept: bool = False
    """an edit of the text keeps it (PATCH ``content``)"""
    exported: bool = False
    """``brain-search export`` writes it (``node_id`` goes out as its label path)"""
    owner: bool = False
    """who the memory belongs to inside its tenant (``store/scope.py``): given when it is written,
    then kept by every edit (a PUT or a PATCH does not take it: a memory never changes hands)"""


MEMORY_FIELDS: tuple[MemoryField, ...] = (
    MemoryField("memory_id", given=True, shown=True, exported=True),
    MemoryField("content", given=True, shown=True, exported=True),
    MemoryField("node_id", given=True, shown=True, kept=True),
    MemoryField("node_path", shown=True),  # written by the service from the node; a graph move rewrites it
    MemoryField("timestamp", given=True, shown=True, kept=True, exported=True),
    MemoryField("source", given=True, shown=True, kept=True, exported=True),
    MemoryField("conversation_id", given=True, shown=True, kept=True, exported=True),
    MemoryField("user_id", given=True, shown=True, kept=True, exported=True, owner=True),
    MemoryField("agent_id", given=True, shown=True, kept=True, exported=True, owner=True),
    MemoryField("metadata", given=True, shown=True, kept=True, exported=True),
    MemoryField("supersedes", given=True, kept=True, exported=True),
    MemoryField("valid_until", given=True, shown=True, kept=True, exported=True),
    # written by the service only
    MemoryField("tenant_id"),
    MemoryField("content_hash"),
    MemoryField("embedding"),
    MemoryField("embedding_model"),
    MemoryField("ingested_at"),
)


def names(*, given: bool | None = None, shown: bool | None = None, kept: bool | None = None) -> tuple[str, ...]:
    """The fields with the given roles, in declaration order (pure)."""
    return tuple(
        f.name
        for f in MEMORY_FIELDS
        if (given is None or f.given == given)
        and (shown is None or f.shown == shown)
        and (kept is None or f.kept == kept)
    )


GIVEN_FIELDS = names(given=True)
SHOWN_FIELDS = names(shown=True)
KEPT_FIELDS = names(kept=True)
EXPORTED_FIELDS = tuple(f.name for f in MEMORY_FIELDS if f.exported)
OWNER_FIELDS = tuple(f.name for f in MEMORY_FIELDS if f.owner)
STORED_FIELDS = tuple(f.name for f in MEMORY_FIELDS)
VIEW_FIELDS = tuple(n for n in SHOWN_FIELDS if n != "node_path")
"""the stored view: what a recall shows but ``node_path``, which a graph move rewrites in place
(recall reads it from its doc values)"""


class MemoryAbout(BaseModel):
    """What a caller says about a memory beside its text and id: each field's type and limits,
    checked at the door (``models/inputs.py``). A write's PUT and PATCH bodies take these."""

    node_id: Text | None = Field(None, description="knowledge-graph node: its id or its label path")
    timestamp: EngineTime | None = Field(None, description="when it happened (ISO 8601; naive times are UTC)")
    source: Text | None = Field(None, max_length=100)
    conversation_id: Text | None = Field(None, max_length=256)
    metadata: JsonObject | None = Field(None, description="free JSON object (size and depth are limited)")
    supersedes: list[Annotated[Text, Field(pattern=MEMORY_ID_PATTERN)]] | None = Field(
        None, max_length=100, description="ids of memories this one replaces: recall leaves those out"
    )
    valid_until: EngineTime | None = Field(None, description="after this time recall leaves the memory out")


class MemoryGiven(MemoryAbout):
    """A memory as a caller gives it (HTTP bodies, MCP ``brain_remember``, the CLI). Its owner
    (``user_id``, ``agent_id``) is given here only: an edit keeps it."""

    user_id: OwnerId | None = Field(
        None, description="the user it belongs to inside the tenant (none: the organisation's shared memory)"
    )
    agent_id: OwnerId | None = Field(None, description="the agent it belongs to (optional, with or without a user)")

    content: Text = Field(..., description="the text; BM25 reads all of it, the embedding model its first ~256 tokens")
    memory_id: Text | None = Field(
        None,
        pattern=MEMORY_ID_PATTERN,
        description="client id (1–256 characters, no whitespace); derived from content + node + timestamp if absent",
    )


TIME_FIELDS = ("timestamp", "valid_until")
"""given as times, queued and stored as ISO text in UTC"""
RESOLVED_FIELDS = ("memory_id", "node_id", "node_path", "supersedes", *TIME_FIELDS)
"""what ``ingest/prepare.py`` works out itself (an id derived, a node resolved, ids sorted, times
in UTC); every other given field is queued as the caller gave it"""


class MemoryQueued(BaseModel):
    """A validated memory as a task carries it (JSON): its node resolved, its times ISO text.
    The worker writes these fields as they are (``build_memory_doc(**item.memory_fields())``)."""

    memory_id: str
    content: str
    node_id: str | None = None
    node_path: str | None = None
    timestamp: str | None = None
    source: str | None = None
    conversation_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    metadata: dict[str, Any] | None = None
    supersedes: list[str] | None = None
    valid_until: str | None = None

    def memory_fields(self) -> dict[str, Any]:
        """This memory's schema fields (what ``build_memory_doc`` takes), without what an
        extension of the model carries for the queue."""
        return {k: getattr(self, k) for k in MemoryQueued.model_fields}


class MemoryStored(BaseModel):
    """A stored memory as a read answers it (``GET /v1/memories/{id}``, lists, history)."""

    memory_id: str
    content: str
    node_id: str | None = None
    node_path: str | None = None
    timestamp: datetime | None = None
    source: str | None = None
    conversation_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    metadata: dict[str, Any] | None = None
    embedding_model: str | None = None
    ingested_at: datetime | None = None
    supersedes: list[str] | None = None
    valid_until: datetime | None = None
