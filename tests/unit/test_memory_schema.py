"""One schema for a memory (issue 54): every list of a memory's fields agrees with
``models/memory.py``, and a given field flows from a request to the stored document with no edit
outside that file and the template (``test_a_given_field_flows_from_the_request_to_the_document``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from brain_search_client.models.memory import (
    EXPORTED_FIELDS as EXPORT_FIELDS,
)
from brain_search_client.models.memory import (
    GIVEN_FIELDS,
    KEPT_FIELDS,
    OWNER_FIELDS,
    RESOLVED_FIELDS,
    SHOWN_FIELDS,
    STORED_FIELDS,
    VIEW_FIELDS,
    MemoryQueued,
    MemoryStored,
)

from brain_search.config import load_settings
from brain_search.graph.store import Node, derive_node_id
from brain_search.ingest.edits import KEPT_FIELDS as EDIT_KEPT
from brain_search.ingest.models import IngestRequest, MemoryIn, MemoryItem, MemoryOut, MemoryPatch, MemoryReplace
from brain_search.ingest.prepare import prepare_items
from brain_search.retrieval.engine.queries import RESULT_FIELDS
from brain_search.store.documents import VIEW_FIELD, VIEW_KEYS, build_memory_doc, read_view
from brain_search.store.scope import TOMBSTONE_FIELD
from brain_search.store.templates import ADDED_FIELDS

ROOT = Path(__file__).resolve().parents[2]
SERVICE_FIELDS = {TOMBSTONE_FIELD, "deleted_at", "view", VIEW_FIELD, "view_v", "moved_from"}
"""the template's fields that are not a memory's: tombstones, the view, a move's mark"""


def test_the_api_takes_exactly_the_given_fields() -> None:
    assert set(MemoryIn.model_fields) == set(GIVEN_FIELDS)
    assert set(MemoryQueued.model_fields) == set(GIVEN_FIELDS) | {"node_path"}
    edit_fields = {"if_version", "if_seq_no", "if_primary_term"}
    assert set(MemoryItem.model_fields) - set(MemoryQueued.model_fields) == edit_fields
    assert set(MemoryStored.model_fields) == set(STORED_FIELDS) - {"tenant_id", "content_hash", "embedding"}
    assert set(MemoryOut.model_fields) - set(MemoryStored.model_fields) == {"version", "superseded_by"}
    edit_fields = set(MemoryReplace.model_fields) - {"refresh", "create_nodes"}
    # the owner is given when a memory is written and kept by every edit: no edit takes it
    assert OWNER_FIELDS == ("user_id", "agent_id") and set(OWNER_FIELDS) <= set(KEPT_FIELDS)
    assert (
        edit_fields
        == set(GIVEN_FIELDS) - {"memory_id", *OWNER_FIELDS}
        == set(MemoryPatch.model_fields) - {"refresh", "create_nodes"}
    )


class _Graph:
    def get(self, tenant_id: str, ref: str) -> Node:
        now = datetime.now(UTC)
        return Node(id=derive_node_id(ref), label=ref, created_at=now, updated_at=now)

    def ensure(self, tenant_id: str, label: str, description: str | None = None) -> Node:
        return self.get(tenant_id, label)


def test_a_given_field_flows_from_the_request_to_the_document() -> None:
    """Every given field set in a request reaches the task item and the stored document, each
    plain field as given: the path a field added to ``models/memory.py`` takes by itself."""
    body = {
        "memory_id": "m1",
        "content": "text",
        "node_id": "Work",
        "timestamp": "2026-01-01T00:00:00+02:00",
        "source": "note",
        "conversation_id": "c1",
        "user_id": "lena",
        "agent_id": "assistant",
        "metadata": {"k": "v"},
        "supersedes": ["m0", "m0b"],
        "valid_until": "2027-01-01T00:00:00Z",
    }
    assert set(body) == set(GIVEN_FIELDS)
    [item] = prepare_items(IngestRequest.model_validate(body), "t", load_settings(), _Graph())
    doc = build_memory_doc(tenant_id="t", embedding=[0.1], embedding_model="e", **item.memory_fields())
    assert set(doc) - {VIEW_FIELD, "view_v"} == set(STORED_FIELDS)
    for name in set(GIVEN_FIELDS) - set(RESOLVED_FIELDS):
        assert doc[name] == body[name], name
    assert datetime.fromisoformat(doc["timestamp"]) == datetime(2025, 12, 31, 22, tzinfo=UTC)
    assert doc["node_path"] == "Work" and doc["supersedes"] == ["m0", "m0b"]
    with pytest.raises(TypeError, match="not a memory field: colour"):
        build_memory_doc(tenant_id="t", memory_id="m", content="x", embedding=[], embedding_model="e", colour="red")


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
        user_id="lena",
        agent_id="assistant",
        metadata={"k": "v"},
        supersedes=["m0"],
        valid_until="2027-01-01T00:00:00+00:00",
    )
    assert set(doc) - {VIEW_FIELD, "view_v"} == set(STORED_FIELDS)
    assert tuple(read_view(doc[VIEW_FIELD])) == VIEW_FIELDS
