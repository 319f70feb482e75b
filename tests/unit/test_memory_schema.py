"""One schema for a memory (issue 54): every list of a memory's fields agrees with
``models/memory.py``, so a field added there and in ``MemoryIn`` cannot be forgotten elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

from brain_search.commands.memories import EXPORT_FIELDS
from brain_search.ingest.edits import KEPT_FIELDS as EDIT_KEPT
from brain_search.ingest.models import MemoryIn, MemoryItem, MemoryOut
from brain_search.models.memory import (
    GIVEN_FIELDS,
    KEPT_FIELDS,
    SHOWN_FIELDS,
    STORED_FIELDS,
    VIEW_FIELDS,
)
from brain_search.retrieval.queries import RESULT_FIELDS
from brain_search.store.documents import TOMBSTONE_FIELD, VIEW_FIELD, VIEW_KEYS, build_memory_doc, read_view
from brain_search.store.templates import ADDED_FIELDS

ROOT = Path(__file__).resolve().parents[2]
SERVICE_FIELDS = {TOMBSTONE_FIELD, "deleted_at", "view", VIEW_FIELD, "view_v", "moved_from"}
"""the template's fields that are not a memory's: tombstones, the view, a move's mark"""


def test_the_api_takes_exactly_the_given_fields() -> None:
    assert set(MemoryIn.model_fields) == set(GIVEN_FIELDS)
    assert set(GIVEN_FIELDS) | {"node_path"} <= set(MemoryItem.model_fields)
    assert set(STORED_FIELDS) - {"tenant_id", "content_hash", "embedding"} <= set(MemoryOut.model_fields)


def test_the_lists_derive_from_the_schema() -> None:
    assert VIEW_KEYS == VIEW_FIELDS and list(SHOWN_FIELDS) == RESULT_FIELDS
    assert EDIT_KEPT == KEPT_FIELDS and set(KEPT_FIELDS) <= set(GIVEN_FIELDS) - {"memory_id", "content"}
    assert EXPORT_FIELDS and set(EXPORT_FIELDS) <= set(GIVEN_FIELDS) and "node_id" not in EXPORT_FIELDS


def test_the_template_maps_every_stored_field_and_nothing_unknown() -> None:
    mapping = json.loads((ROOT / "index_templates" / "memories.json").read_text())
    props = set(mapping["template"]["mappings"]["properties"])
    assert set(STORED_FIELDS) <= props, set(STORED_FIELDS) - props
    assert props - set(STORED_FIELDS) == SERVICE_FIELDS
    assert set(ADDED_FIELDS) <= props


def test_a_full_document_holds_the_schema_and_its_view_the_view_fields() -> None:
    doc = build_memory_doc(
        tenant_id="t",
        memory_id="m1",
        content="text",
        embedding=[0.1, 0.2],
        embedding_model="e",
        node_id="n1",
        node_path="Work",
        timestamp="2026-01-01T00:00:00+00:00",
        source="note",
        conversation_id="c1",
        metadata={"k": "v"},
        supersedes=["m0"],
        valid_until="2027-01-01T00:00:00+00:00",
    )
    assert set(doc) - {VIEW_FIELD, "view_v"} == set(STORED_FIELDS)
    assert tuple(read_view(doc[VIEW_FIELD])) == VIEW_FIELDS
