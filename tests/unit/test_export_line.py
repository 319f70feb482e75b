"""Issue 54 item 5: `brain-search export` writes every field a write takes, so `import` gives back
the whole memory (pure)."""

from __future__ import annotations

from brain_search_client import export_line

from brain_search.ingest.models import MemoryIn, MemoryOut


def test_every_field_a_write_takes_is_exported_and_read_back() -> None:
    stored = MemoryOut(
        memory_id="doc#1",
        content="text",
        node_id="n_1",
        node_path="Work/Offsite",
        timestamp="2026-03-02T10:00:00Z",
        source="chat",
        conversation_id="c1",
        user_id="lena",
        agent_id="assistant",
        metadata={"chunk_of": "doc", "chunk_index": 1, "chunk_count": 2, "k": [1]},
        embedding_model="m",
        ingested_at="2026-03-02T11:00:00Z",
        supersedes=["old"],
        valid_until="2026-04-01T00:00:00Z",
        version=7,
    )
    line = export_line(stored)
    assert set(line) == set(MemoryIn.model_fields)  # every field of a write, none left out
    back = MemoryIn.model_validate(line)
    assert back.node_id == "Work/Offsite"  # the node by its label path, for another tenant
    for field in set(MemoryIn.model_fields) - {"node_id", "timestamp", "valid_until"}:
        assert getattr(back, field) == getattr(stored, field), field
