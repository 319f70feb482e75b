"""Readers of `brain-search ingest`: JSON Lines and LoCoMo."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from brain_search.ingest.sources import parse_session_date, read_jsonl, read_locomo, session_time, turn_content

LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo10.json"


def test_read_jsonl_reports_bad_lines_and_keeps_the_rest() -> None:
    text = (
        '{"content": "a", "memory_id": "1"}\n\nnot json\n{"content": ""}\n'
        '{"content": "b", "bogus": 1}\n{"content": "c"}\n'
    )
    recs = list(read_jsonl(io.StringIO(text)))
    assert [r.where for r in recs] == ["line 1", "line 3", "line 4", "line 5", "line 6"]
    assert [r.memory.content if r.memory else None for r in recs] == ["a", None, None, None, "c"]
    assert (
        "not JSON" in (recs[1].error or "") and "content" in (recs[2].error or "") and "bogus" in (recs[3].error or "")
    )


def test_parse_session_date() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("10:04 am on 19  January, 2024") == datetime(2024, 1, 19, 10, 4, tzinfo=UTC)
    with pytest.raises(ValueError):
        parse_session_date("yesterday")


def test_session_time_keeps_the_turns_when_the_stamp_is_unreadable() -> None:
    assert session_time("12:40 am on 27 March, 2022") == datetime(2022, 3, 27, 0, 40, tzinfo=UTC)
    assert session_time("yesterday") is None
    assert session_time(None) is None
    assert session_time("") is None


def _tiny_locomo(path: Path) -> Path:
    sample = {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_2_date_time": "9:00 am on 2 June, 2023",
            "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "Later.", "blip_caption": "a dog"}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob!"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Hi Ann."},
            ],
        },
    }
    path.write_text(json.dumps([sample, {**sample, "sample_id": "conv-2"}]))
    return path


def test_read_locomo_maps_tenant_node_timestamp_and_id(tmp_path: Path) -> None:
    recs = list(read_locomo(_tiny_locomo(tmp_path / "l.json"), {"conv-1"}))
    assert [(r.tenant_id, r.memory.memory_id) for r in recs if r.memory] == [
        ("conv-1", "D1:1"),
        ("conv-1", "D1:2"),
        ("conv-1", "D2:1"),
    ]
    m = recs[2].memory
    assert m is not None
    assert m.node_id == "conv-1/session_2" and m.timestamp == datetime(2023, 6, 2, 9, 0, tzinfo=UTC)
    assert (
        m.content
        == "Bob: Later. [shared a photo: a dog]"
        == turn_content({"speaker": "Bob", "text": "Later.", "blip_caption": "a dog"})
    )
    assert m.conversation_id == "conv-1" and m.metadata == {"speaker": "Bob", "session": 2}


@pytest.mark.skipif(not LOCOMO.is_file(), reason="LoCoMo is not in ../shared/data")
def test_the_real_locomo_file() -> None:
    recs = list(read_locomo(LOCOMO))
    assert len(recs) == 5882 and not [r for r in recs if r.error]
    assert len({r.tenant_id for r in recs}) == 10
    assert all(r.memory and r.memory.timestamp for r in recs)
    first = recs[0].memory
    assert first is not None and (first.memory_id, first.node_id) == ("D1:1", "conv-26/session_1")
