"""Issue 54 item 3: an id means one thing (``ingest/chunking.id_problem``, pure)."""

from __future__ import annotations

import pytest

from brain_search.ingest.chunking import id_problem

PIECE = {"chunk_of": "doc", "chunk_index": 1, "chunk_count": 2}


@pytest.mark.parametrize(
    ("memory_id", "metadata", "chunk", "field"),
    [
        ("doc", None, False, None),
        ("doc", {"topic": "x"}, True, None),
        (None, None, True, None),
        ("doc#1", PIECE, False, None),  # a piece as `brain-search export` writes it
        ("doc#1", None, False, "memory_id"),
        ("doc#1", PIECE, True, "memory_id"),  # no pieces of pieces
        ("doc#01", {**PIECE}, False, "memory_id"),
        ("doc#1", {**PIECE, "chunk_of": "other"}, False, "memory_id"),
        ("doc#1", {**PIECE, "chunk_index": True}, False, "memory_id"),
        ("doc#2", {**PIECE, "chunk_index": 2}, False, "memory_id"),  # past its count
        ("a#b#1", {**PIECE, "chunk_of": "a#b"}, False, "memory_id"),
        ("#1", {**PIECE, "chunk_of": ""}, False, "memory_id"),
        ("a/history", None, False, "memory_id"),
        ("doc", {"chunk_of": "x"}, False, "metadata"),
        (None, {"chunk_count": 3}, False, "metadata"),
    ],
)
def test_id_problem(memory_id: str | None, metadata: dict[str, object] | None, chunk: bool, field: str | None) -> None:
    problem = id_problem(memory_id, metadata, chunk)
    assert (problem[0] if problem else None) == field, problem
