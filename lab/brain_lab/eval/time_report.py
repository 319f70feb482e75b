"""The eval report's "Time in words" sections: R@10 per question category for Z-aware (time words
read against the question's time) and the same recall with time words off, with the 95 % paired-
bootstrap interval of the difference; one section per dataset with dates (LoCoMo: each question
asked at its conversation's last session; RealMem: at its own session's time)."""

from __future__ import annotations

from collections.abc import Sequence

from brain_lab.eval.brain_systems import Z_AWARE, Z_AWARE_NO_TIME
from brain_lab.eval.metrics import mean, paired_interval
from brain_lab.eval.retrieval_eval import RetrievalResult

METRIC = "R@10"
ASKED_AT = {
    "locomo": "LoCoMo, each question asked at its conversation's last session",
    "realmem": "RealMem, each query asked at its session's time, over the sessions before it",
}
"""dataset → the section's title: when its questions are asked"""


def time_words_md(results: Sequence[RetrievalResult]) -> list[str]:
    both = [r for r in results if Z_AWARE in r.systems and Z_AWARE_NO_TIME in r.systems]
    lines: list[str] = []
    for dataset in dict.fromkeys(r.dataset for r in both):
        lines += _section(dataset, [r for r in both if r.dataset == dataset])
    return lines


def _section(dataset: str, results: Sequence[RetrievalResult]) -> list[str]:
    lines = [
        f"## Time in words ({ASKED_AT.get(dataset, dataset)})",
        "",
        f'{METRIC} of Z-aware reading time words ("in July 2022", "last week") against '
        f"`{Z_AWARE_NO_TIME}`; the interval is the paired bootstrap's of the difference.",
        "",
    ]
    rows = []
    same = True
    for res in results:
        on, off = res.run(Z_AWARE), res.run(Z_AWARE_NO_TIME)
        cuts = [(c, res.select(c)) for c in res.categories()] + [(res.main_label, res.select())]
        for label, qs in cuts:
            a = [on.per_query[q.query_id][METRIC] for q in qs]
            b = [off.per_query[q.query_id][METRIC] for q in qs]
            same = same and a == b
            lo, hi = paired_interval(a, b)
            rows.append([res.split, label, str(len(qs)), f"{mean(a):.3f}", f"{mean(b):.3f}", f"[{lo:+.3f}, {hi:+.3f}]"])
    header = ["split", "questions", "n", "time words read", "off", "difference, 95 %"]
    lines += ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    if same:
        lines += ["", f"The two recalls give the same {METRIC} on every {dataset} question."]
    return [*lines, ""]
