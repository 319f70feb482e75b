"""LoCoMo and SciFact loaders on tiny hand-made files (the real data is not needed here)."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from brain_lab.eval.datasets import (
    load_locomo,
    load_scifact,
    parse_evidence,
    read_qrels,
    resolve_data_dir,
    spoken_text,
    subsample,
)

from brain_search.config import load_settings
from brain_search.errors import SetupError


def test_parse_evidence_is_defensive() -> None:
    assert parse_evidence(["D1:3"]) == (["D1:3"], [])
    assert parse_evidence(["D8:6; D9:17"]) == (["D8:6", "D9:17"], [])
    assert parse_evidence(["D9:1 D4:4 D4:6"]) == (["D9:1", "D4:4", "D4:6"], [])
    assert parse_evidence(["D30:05"]) == (["D30:5"], [])
    assert parse_evidence(["D", "D:11:26", "D2:1", "D2:1"]) == (["D2:1"], ["D", "D:11:26"])


def _locomo(tmp: Path) -> Path:
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a photo of a cat"},
        ],
        "session_2_date_time": "9:00 am on 1 June, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Miso broke a vase."}],
        "session_3_date_time": "9:00 am on 2 June, 2023",
    }
    qa = [
        {"question": "What is Ann's cat called?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
        {"question": "What broke?", "answer": "a vase", "evidence": ["D2:1; D1:1"], "category": 1},
        {"question": "Bad evidence", "answer": "x", "evidence": ["D", "D9:9"], "category": 2},
        {"question": "Did Bob adopt a dog?", "adversarial_answer": "no", "evidence": ["D1:2"], "category": 5},
    ]
    samples = [{"sample_id": f"conv-{i}", "conversation": conv, "qa": qa} for i in range(10)]
    (tmp / "locomo").mkdir()
    (tmp / "locomo" / "locomo10.json").write_text(json.dumps(samples))
    return tmp


def test_load_locomo(tmp_path: Path) -> None:
    ds = load_locomo(_locomo(tmp_path), "test")
    assert sorted(ds.memories) == ["conv-7", "conv-8", "conv-9"]
    mems = ds.memories["conv-7"]
    assert [m.memory_id for m in mems] == ["D1:1", "D1:2", "D2:1"]
    assert mems[0].content == "Ann: I adopted a cat named Miso."
    assert mems[1].content == "Bob: Lovely! [shared a photo: a photo of a cat]"
    assert spoken_text(mems[1]) == "Lovely!"
    assert mems[2].node_id == "conv-7/session_2"
    assert mems[2].timestamp == datetime(2023, 6, 1, 9, 0, tzinfo=UTC)
    qs = [q for q in ds.queries if q.tenant_id == "conv-7"]
    assert [q.category for q in qs] == ["single-hop", "multi-hop", "adversarial"]
    assert qs[1].relevant == {"D2:1": 1, "D1:1": 1}
    assert ds.counts["evidence tokens malformed (skipped)"] == 3
    assert ds.counts["evidence ids not a turn (skipped)"] == 3
    assert ds.counts["questions without usable evidence (skipped)"] == 3
    assert sorted(load_locomo(tmp_path, "dev").memories) == [f"conv-{i}" for i in range(7)]


def _scifact(tmp: Path) -> Path:
    root = tmp / "scifact"
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": "10", "title": "Cats.", "text": "Cats purr."}, {"_id": "11", "title": "", "text": "Dogs bark."}]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    qs = [{"_id": "1", "text": "cats purr"}, {"_id": "2", "text": "dogs bark"}, {"_id": "3", "text": "birds"}]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\t1\n3\t99\t1\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n2\t11\t1\n2\t10\t0\n")
    return tmp


def test_load_scifact(tmp_path: Path) -> None:
    data = _scifact(tmp_path)
    test = load_scifact(data, "test")
    assert [m.content for m in test.memories["scifact"]] == ["Cats. Cats purr.", "Dogs bark."]
    assert [(q.query_id, q.relevant) for q in test.queries] == [("1", {"10": 1})]
    assert test.counts["queries skipped"] == 1
    dev = load_scifact(data, "dev")
    assert [(q.query_id, q.relevant) for q in dev.queries] == [("2", {"11": 1})]
    assert read_qrels(data / "scifact" / "qrels" / "train.tsv") == {"2": {"11": 1}}


def test_subsample_keeps_relevant_memories(tmp_path: Path) -> None:
    ds = load_locomo(_locomo(tmp_path), conversations=[0])
    small = subsample(ds, 1, 0)
    assert [q.text for q in small.queries] == ["What is Ann's cat called?"]
    assert [m.memory_id for m in small.memories["conv-0"]] == ["D1:1"]


def test_data_dir_setting(tmp_path: Path) -> None:
    assert resolve_data_dir(load_settings(data_dir=tmp_path)) == tmp_path
    with pytest.raises(SetupError):
        resolve_data_dir(load_settings(data_dir=tmp_path / "missing"))
