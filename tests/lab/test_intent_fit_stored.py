"""The intent fit reads each dev row's first-seen regex output from lab/data/intent_first_seen.jsonl:
never the git history, never today's regex."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from brain_lab.eval import first_seen, intent_fit
from brain_lab.eval.first_seen import (
    FIRST_SEEN_PATH,
    Detector,
    FirstSeen,
    FirstSeenStore,
    add_first_seen,
    current_detector,
    dev_lines,
    dev_only,
    load_first_seen,
)
from brain_lab.eval.intent_eval import load_labelled_queries
from brain_lab.eval.intent_fit import (
    design,
    final_design,
    forward_cv,
)

from brain_search.models import Intent
from brain_search.retrieval.intent import QueryIntent, analyze
from brain_search.retrieval.intent.model import REGEX_FEATURES, HybridRule, features, regex_features


def _vectors(n: int) -> np.ndarray:
    return np.random.default_rng(11).normal(size=(n, 384))


def test_the_stored_file_holds_every_dev_row_and_no_test_row() -> None:
    store = load_first_seen()  # canonical form and each record at its dev row's line, or it raises
    rows = dev_only(load_labelled_queries())
    assert [r.query for r in store.of(rows)] == [q.query for q in rows]
    assert len(store.records) == len(rows)
    assert [r.line for r in store.records] == sorted(dev_lines())
    assert store.sha256 == hashlib.sha256(FIRST_SEEN_PATH.read_bytes()).hexdigest()
    assert {r.detector for r in store.records} >= {"76c0bae", "0839851"}


def test_the_fitter_never_calls_git(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not hasattr(intent_fit, "HISTORY") and not hasattr(intent_fit, "historical_detector")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a subprocess was started: {args}")

    for name in ("run", "Popen", "check_output", "call"):
        monkeypatch.setattr(subprocess, name, refuse)
    monkeypatch.setattr(os, "system", refuse)
    rows = dev_only(load_labelled_queries())
    final = final_design(rows, _vectors(len(rows)))
    assert final.design.x.shape == (len(rows), 384 + len(REGEX_FEATURES) + len(final.vocab))
    assert final.first_seen_sha256 == load_first_seen().sha256
    few = [q for q in rows if q.source is None or q.batch in ("4", "5")]
    scores = forward_cv(few, _vectors(len(few)), (1.0,), (HybridRule(0.3, True, False),))[1.0]
    # the first-seen regex figures of lab/data/README.md: batch 4 30/42, batch 5 40/44
    assert [(s.group, round(s.regex * s.n)) for s in scores] == [("batch 4", 30), ("batch 5", 40)]


def test_the_fit_reads_no_regex_code_of_today(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("today's regex was run")

    for module in (intent_fit, first_seen):
        for name in ("analyze", "is_statement", "quotes_as_emphasis", "intent_for_z"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, refuse)
    rows = dev_only(load_labelled_queries())
    assert final_design(rows, _vectors(len(rows))).design.x.shape[0] == len(rows)


def test_a_record_of_todays_detector_gives_the_models_own_features() -> None:
    # the stored columns are intent_model.features' columns, in REGEX_FEATURES order
    rows = dev_only(load_labelled_queries())[::7]
    today = current_detector()
    seen = [FirstSeen.of(i, q.query, today.analyze(q.query), today.table, "today") for i, q in enumerate(rows)]
    vectors = _vectors(len(rows))
    vocab = ("<s> what", "did", "themes", "?")
    d = design(rows, vectors, seen, vocab)
    index = {g: i for i, g in enumerate(vocab)}
    expected = np.stack(
        [features(q.query, analyze(q.query), v, today.table, vocab=index) for q, v in zip(rows, vectors, strict=True)]
    )
    assert np.array_equal(d.x, expected)
    for q, s in zip(rows, seen, strict=True):
        qi = analyze(q.query)
        assert np.array_equal(s.regex_features(), regex_features(q.query, qi, today.table))
        assert FirstSeen.from_json(json.loads(s.to_json())) == s
        back = s.intent()
        assert (back.detected_intent, back.cues, back.target_z, back.confidence) == (
            qi.detected_intent,
            qi.cues,
            qi.target_z,
            qi.confidence,
        )


def _write_rows(path: Path, rows: list[tuple[str, str, str]]) -> None:
    path.write_text(
        "".join(json.dumps({"query": q, "label": label, "split": split}) + "\n" for q, label, split in rows)
    )


def _constant(tier: Intent, cue: str) -> Detector:
    def run(query: str) -> QueryIntent:
        return QueryIntent(tier, 0.5, 0.2, 0.5, (cue,), query, ())

    return Detector(run, current_detector().table)


def test_a_new_batch_is_added_with_the_current_detector_and_old_records_stay(tmp_path: Path) -> None:
    rows, stored = tmp_path / "rows.jsonl", tmp_path / "first_seen.jsonl"
    _write_rows(rows, [("alpha query", "precise", "dev"), ("held out", "broad", "test"), ("beta", "exact", "dev")])
    store, counts = add_first_seen("c1", stored, rows, _constant(Intent.precise, "old_cue"))
    assert counts == {"kept": 0, "renumbered": 0, "added": 2, "dropped": 0}
    assert [(r.line, r.query, r.detector, r.tier) for r in store.records] == [
        (1, "alpha query", "c1", "precise"),
        (3, "beta", "c1", "precise"),
    ]
    assert stored.read_text() == store.text() and load_first_seen(stored, rows) == store
    # a dev row dropped, a batch appended: the new rows are first met by the detector of the day,
    # the old ones keep the output of theirs (renumbered where their line moved)
    _write_rows(rows, [("held out", "broad", "test"), ("beta", "exact", "dev"), ("gamma query", "broad", "dev")])
    with pytest.raises(ValueError, match="renumber"):
        load_first_seen(stored, rows)
    store, counts = add_first_seen("c2", stored, rows, _constant(Intent.broad, "new_cue"))
    assert counts == {"kept": 0, "renumbered": 1, "added": 1, "dropped": 1}
    assert [(r.line, r.query, r.detector, r.tier, r.cues) for r in store.records] == [
        (2, "beta", "c1", "precise", ("old_cue",)),
        (3, "gamma query", "c2", "broad", ("new_cue",)),
    ]
    assert load_first_seen(stored, rows).sha256 == store.sha256


def test_a_file_not_written_by_the_store_is_refused(tmp_path: Path) -> None:
    rows, stored = tmp_path / "rows.jsonl", tmp_path / "first_seen.jsonl"
    _write_rows(rows, [("alpha query", "precise", "dev")])
    store, _ = add_first_seen("c1", stored, rows)
    stored.write_text(json.dumps(json.loads(store.text())) + "\n")  # one line, but not compact
    with pytest.raises(ValueError, match="sorted keys"):
        load_first_seen(stored, rows)
    other = FirstSeenStore(tuple(r for r in store.records if r.query != "alpha query"))
    with pytest.raises(ValueError, match="add them"):
        other.of(dev_only(load_labelled_queries())[:1])
