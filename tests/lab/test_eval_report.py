"""The report states losses plainly and writes its files (synthetic results, no engine)."""

import json
from pathlib import Path

from brain_lab.eval.brain_systems import Z_AWARE, Z_NAIVE
from brain_lab.eval.datasets import Dataset, EvalQuery
from brain_lab.eval.intent_eval import LabelledQuery, evaluate_intents
from brain_lab.eval.metrics import paired_interval
from brain_lab.eval.report import EvalReport, losses, targets, tier_ab, write_report
from brain_lab.eval.retrieval_eval import LOCOMO_METRICS, evaluate_systems


class _Fixed:
    def __init__(self, name: str, answers: dict[str, list[str]]) -> None:
        self.name = name
        self.answers = answers

    def search(self, tenant_id: str, query: str, limit: int, **bounds: object) -> list[str]:
        return self.answers[query][:limit]


def _dataset() -> Dataset:
    qs = [
        EvalQuery("q1", "t", "when did Ann adopt Miso?", {"a": 1}, "temporal"),
        EvalQuery("q2", "t", "what do I think about cats?", {"b": 1}, "single-hop"),
        EvalQuery("q3", "t", "Did Bob adopt a dog?", {"c": 1}, "adversarial"),
    ]
    return Dataset("locomo", "test", {"t": []}, qs)


def test_losses_and_ab_table(tmp_path: Path) -> None:
    ds = _dataset()
    answers_good = {"when did Ann adopt Miso?": ["a"], "what do I think about cats?": ["b"], "Did Bob adopt a dog?": []}
    answers_half = {
        "when did Ann adopt Miso?": ["a"],
        "what do I think about cats?": ["x", "b"],
        "Did Bob adopt a dog?": [],
    }
    systems = [_Fixed("BM25 (content)", answers_good), _Fixed(Z_NAIVE, answers_half), _Fixed(Z_AWARE, answers_half)]
    res = evaluate_systems(ds, systems, LOCOMO_METRICS, 10)
    assert res.table()[Z_AWARE]["MRR@10"] == 0.75  # (1 + 1/2) / 2, adversarial left out
    report = EvalReport(
        command="brain-search eval",
        meta={"date": "today"},
        retrieval=[res],
        detected={"when did Ann adopt Miso?": "precise", "what do I think about cats?": "conceptual"},
    )
    lost = losses(report)
    assert any("categories 1–4, MRR@10: Z-aware 0.750 < BM25 (content) 1.000" in line for line in lost)
    assert any("better on 0 queries, worse on 1; 95 % paired-bootstrap interval of Δ [" in line for line in lost)
    assert any("category single-hop" in line for line in lost)
    rows = {r[0]: r for r in tier_ab(report, "test")}
    assert rows["precise"] == ["precise", "locomo nDCG@10", "1", "1.000", "1.000", "+0.000"]
    assert rows["conceptual"][2] == "1" and "exact" not in rows
    path = write_report(report, tmp_path)
    text = path.read_text()
    assert "## Where Z-aware loses" in text and "BM25 (content)" in text
    assert (tmp_path / "results.json").is_file()
    assert (tmp_path / "retrieval_locomo_test.png").stat().st_size > 1000
    assert (tmp_path / "z_ab_test.png").is_file()


def test_paired_interval_brackets_the_mean_difference_and_is_reproducible() -> None:
    a = [1.0, 0.5, 0.0, 1.0, 0.25, 0.75, 1.0, 0.0]
    b = [0.5, 0.5, 0.0, 1.0, 0.0, 0.75, 0.5, 0.0]
    lo, hi = paired_interval(a, b)
    assert lo <= 0.15625 <= hi and lo >= 0.0  # a never below b: no resample goes negative
    assert (lo, hi) == paired_interval(a, b)
    tie_lo, tie_hi = paired_interval([1.0, 0.0] * 20, [0.0, 1.0] * 20)
    assert tie_lo < 0 < tie_hi


def test_intent_parts_are_reported_beside_the_pooled_figure(tmp_path: Path) -> None:
    rows = [
        LabelledQuery("a", "exact", "test"),
        LabelledQuery("b", "broad", "test"),
        LabelledQuery("c", "exact", "test", source="test-2", batch="T1"),
        LabelledQuery("d", "exact", "test", source="test-2", batch="T2"),
    ]
    ir = evaluate_intents(rows, lambda q: "exact", "test", batches=True)
    report = EvalReport(command="brain-search eval", meta={}, intent=[ir])
    (goal,) = targets(report, "test")
    assert goal == (
        "intent accuracy ≥ 0.90 (spec > 0.80): MISSED, 0.750 pooled over 4 rows; "
        "original 0.500 (n=2), test-2 1.000 (n=2)"
    )
    write_report(report, tmp_path)
    md = (tmp_path / "README.md").read_text()
    assert "| test-2 T2 | 1 | 1.000 | [0.207, 1.000] | 1.000 |" in md
    assert "| original | 2 | 0.500 | [0.095, 0.905] | 0.500 |" in md
    saved = json.loads((tmp_path / "results.json").read_text())["intent"][0]["parts"]
    assert saved[0] == {"group": "original", "batch": None, "n": 2, "correct": 1, "near": 1}
    assert saved[-1] == {"group": "test-2", "batch": "T2", "n": 1, "correct": 1, "near": 1}
