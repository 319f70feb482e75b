"""A recall reads a memory's stored view (documents.with_view) and its node path's doc value,
never ``_source`` (retrieval/views.py)."""

from __future__ import annotations

import orjson

from brain_search.retrieval.queries import NODE_PATH_VALUES, result_fetch
from brain_search.retrieval.views import view_source
from brain_search.store.documents import VIEW_FIELD, VIEW_MARK, build_memory_doc, with_view


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
    view = orjson.loads(doc[VIEW_FIELD])
    assert doc[VIEW_MARK] == 1
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
    view = orjson.loads(with_view(doc)[VIEW_FIELD])
    assert view["metadata"] == {"n": 4} and view["source"] == "chat"


def test_a_hit_is_read_from_its_view_and_node_path() -> None:
    doc = _doc()
    hit = {"_id": "x", "fields": {VIEW_FIELD: [doc[VIEW_FIELD]], NODE_PATH_VALUES: ["Work/Team/Offsite"]}}
    src = view_source(hit)
    assert src is not None and src["content"] == doc["content"] and src["node_path"] == "Work/Team/Offsite"
    assert view_source({"_id": "y", "fields": {}}) is None  # stored before views: read from _source


def test_recall_fetches_no_source() -> None:
    fetch = result_fetch()
    assert fetch["_source"] is False
    assert fetch["stored_fields"] == [VIEW_FIELD] and fetch["docvalue_fields"] == [NODE_PATH_VALUES]
