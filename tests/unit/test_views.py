"""A recall reads a memory's view (documents.with_view), its memory id and its node path from doc
values, never a stored field (retrieval/engine/sources.py)."""

from __future__ import annotations

import pytest

from brain_search.errors import StoreUnavailable
from brain_search.retrieval.engine.queries import MEMORY_ID_VALUES, NODE_PATH_VALUES, result_fetch
from brain_search.retrieval.engine.sources import hit_id, view_source
from brain_search.store.documents import (
    OLD_VIEW_FIELD,
    VIEW_FIELD,
    VIEW_MARK,
    build_memory_doc,
    memory_doc_id,
    read_view,
    with_view,
)


def _doc() -> dict:
    return build_memory_doc(
        tenant_id="t1",
        memory_id="m1",
        content="The offsite moved to Lisbon.",
        embedding=[0.5] * 4,
        embedding_model="all-MiniLM-L6-v2",
        node_id="Work/Team",
        timestamp="2026-03-04T05:06:07.123456+00:00",
        conversation_id="c1",
        metadata={"kind": {"of": "note"}, "n": 3},
    )


def test_the_view_holds_what_a_recall_shows_and_no_vector() -> None:
    doc = _doc()
    view = read_view(doc[VIEW_FIELD])
    assert doc[VIEW_MARK] == 2
    assert view == {
        "memory_id": "m1",
        "content": "The offsite moved to Lisbon.",
        "node_id": "Work/Team",
        "timestamp": "2026-03-04T05:06:07.123456+00:00",
        "conversation_id": "c1",
        "metadata": {"kind": {"of": "note"}, "n": 3},
    }
    assert "embedding" not in view and "node_path" not in view  # a graph move rewrites the path in place


def test_a_rewrite_makes_the_view_again_from_the_changed_fields() -> None:
    doc = {**_doc(), "metadata": {"n": 4}, "source": "chat"}
    rewritten = with_view({**doc, OLD_VIEW_FIELD: "{}"})  # a format-1 view is dropped
    view = read_view(rewritten[VIEW_FIELD])
    assert view["metadata"] == {"n": 4} and view["source"] == "chat" and OLD_VIEW_FIELD not in rewritten


def test_a_hit_is_read_from_its_view_and_node_path() -> None:
    doc = _doc()
    hit = {"_id": "x", "fields": {VIEW_FIELD: [doc[VIEW_FIELD]], NODE_PATH_VALUES: ["Work/Team/Offsite"]}}
    src = view_source(hit)
    assert src is not None and src["content"] == doc["content"] and src["node_path"] == "Work/Team/Offsite"
    assert view_source({"_id": "y", "fields": {}}) is None  # stored before views: read from _source


def test_recall_fetches_no_stored_field() -> None:
    fetch = result_fetch()
    assert fetch["_source"] is False and fetch["stored_fields"] == "_none_"
    assert fetch["docvalue_fields"] == [VIEW_FIELD, MEMORY_ID_VALUES, NODE_PATH_VALUES]


def test_a_view_reads_with_or_without_base64_padding() -> None:
    value = with_view(_doc())[VIEW_FIELD]
    assert value.endswith("=")  # this one is padded as written
    assert read_view(value) == read_view(value.rstrip("="))  # the engine's doc value has no padding


def test_a_hits_id_is_its_tenant_and_memory_ids() -> None:
    assert hit_id("t1", {"fields": {MEMORY_ID_VALUES: ["m1"]}}) == memory_doc_id("t1", "m1")
    assert hit_id("t1", {"_id": "given", "fields": {}}) == "given"
    with pytest.raises(StoreUnavailable):
        hit_id("t1", {"fields": {}})
