import json
from pathlib import Path

import pytest
from brain_lab.eval.agreement import DEFAULT_SECOND_LABELS, agreement, confusion, load_second_labels, unanimous
from brain_lab.eval.intent_eval import load_labelled_queries


def test_identical_labels_agree_fully() -> None:
    a = ["exact", "precise", "balanced", "conceptual", "broad"]
    got = agreement(a, a)
    assert (got.n, got.accuracy, got.within_one, got.kappa) == (5, 1.0, 1.0, 1.0)


def test_kappa_corrects_for_chance() -> None:
    # both sides say "balanced" 3 times out of 4 and agree on 2 of those: raw agreement 0.5,
    # chance (0.75·0.75 + 0.25·0.25) = 0.625, kappa (0.5 - 0.625) / 0.375 = -1/3
    a = ["balanced", "balanced", "balanced", "broad"]
    b = ["balanced", "balanced", "broad", "balanced"]
    got = agreement(a, b)
    assert got.accuracy == 0.5
    assert got.kappa == pytest.approx(-1 / 3)
    assert got.within_one == 0.5  # balanced vs broad is two tiers apart


def test_within_one_counts_neighbouring_tiers() -> None:
    got = agreement(["precise", "exact"], ["balanced", "broad"])
    assert got.accuracy == 0.0
    assert got.within_one == 0.5


def test_confusion_rows_are_the_first_side() -> None:
    m = confusion(["broad", "broad", "exact"], ["balanced", "broad", "exact"])
    assert m[4][2] == 1 and m[4][4] == 1 and m[0][0] == 1
    assert sum(map(sum, m)) == 3


def test_unanimous_per_row() -> None:
    assert unanimous(["exact", "broad"], ["exact", "balanced"], ["exact", "broad"]) == [True, False]


def test_bad_input_is_an_error() -> None:
    with pytest.raises(ValueError, match="not one of"):
        agreement(["vague"], ["broad"])
    with pytest.raises(ValueError, match="one label"):
        agreement(["broad"], [])
    with pytest.raises(ValueError, match="no rows"):
        agreement([], [])


def test_the_committed_second_labels_load() -> None:
    second = load_second_labels()
    assert set(second.labels) == {"A", "B"}
    assert len(second.rows) == 239  # the original author's rows: 144 dev + 95 test
    assert sum(r["split"] == "test" for r in second.rows) == 95
    assert all(r.get("source") is None for r in second.rows)
    assert all(len(v) == 239 for v in second.labels.values())


def test_the_committed_test2_labels_load() -> None:
    second = load_second_labels(DEFAULT_SECOND_LABELS.parent / "intent_test2_second_labels.jsonl")
    assert set(second.labels) == {"C", "D"}
    assert all(r["split"] == "test" and r["source"] == "test-2" for r in second.rows)
    # every test-2 row, each once per labeller
    n = sum(q.source == "test-2" for q in load_labelled_queries())
    assert len(second.rows) == n and all(len(v) == n for v in second.labels.values())


def test_second_labels_must_match_the_queries_file(tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "compensation", "label": "balanced", "split": "dev"}) + "\n")
    labels = tmp_path / "l.jsonl"
    row = {"line": 1, "labeller": "A", "label": "balanced", "sure": True, "query": "compensation"}
    labels.write_text(json.dumps(row) + "\n")
    assert load_second_labels(labels, queries).labels == {"A": ["balanced"]}
    labels.write_text(json.dumps(row | {"query": "salary"}) + "\n")
    with pytest.raises(ValueError, match="not line 1"):
        load_second_labels(labels, queries)
    labels.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ValueError, match="twice"):
        load_second_labels(labels, queries)
    labels.write_text(json.dumps(row) + "\n" + json.dumps(row | {"labeller": "B", "line": 2}) + "\n")
    with pytest.raises(ValueError, match="not line 2"):
        load_second_labels(labels, queries)
