"""One memory's fields, declared once (issue 54, "One schema for a memory").

Every place that lists a memory's fields derives its list from ``MEMORY_FIELDS``: the stored
document (``store/documents.py``: what ``build_memory_doc`` writes, the view a recall reads), a
recall's ``_source`` fallback (``retrieval/queries.py`` ``RESULT_FIELDS``), what an edit of the
text keeps (``ingest/edits.py``), and the export (``commands/memories.py``). The typed edges
(``ingest/models.py``: ``MemoryIn``, ``MemoryItem``) declare each given field's type and limits;
``tests/unit/test_memory_schema.py`` holds them, ``index_templates/memories.json`` and
``build_memory_doc`` to this list, so adding a field is this file, ``MemoryIn`` and the template
mapping, and the test names anything else that was missed.
"""

from __future__ import annotations

from dataclasses import dataclass


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


MEMORY_FIELDS: tuple[MemoryField, ...] = (
    MemoryField("memory_id", given=True, shown=True, exported=True),
    MemoryField("content", given=True, shown=True, exported=True),
    MemoryField("node_id", given=True, shown=True, kept=True),
    MemoryField("node_path", shown=True),  # written by the service from the node; a graph move rewrites it
    MemoryField("timestamp", given=True, shown=True, kept=True, exported=True),
    MemoryField("source", given=True, shown=True, kept=True, exported=True),
    MemoryField("conversation_id", given=True, shown=True, kept=True, exported=True),
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
STORED_FIELDS = tuple(f.name for f in MEMORY_FIELDS)
VIEW_FIELDS = tuple(n for n in SHOWN_FIELDS if n != "node_path")
"""the stored view: what a recall shows but ``node_path``, which a graph move rewrites in place
(recall reads it from its doc values)"""
