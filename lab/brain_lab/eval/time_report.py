"""The eval report's "Time in words" section: LoCoMo R@10 per question category for Z-aware
(time words read against the conversation's last session) and the same recall with time words
off, with the 95 % paired-bootstrap interval of the difference."""

from __future__ import annotations

from brain_lab.eval.brain_systems import Z_AWARE, Z_AWARE_NO_TIME
from brain_lab.eval.metrics import mean, paired_interval
from brain_lab.eval.retrieval_eval import RetrievalResult

METRIC = "R@10"


def time_words_md(results: list[RetrievalResult]) -> list[str]:
    both = [r for r in results if Z_AWARE in r.systems and Z_AWARE_NO_TIME in r.systems]
    if not both:
        return []
    lines = [
        "## Time in words (LoCoMo, each question asked at its conversation's last session)",
        "",
        f'{METRIC} of Z-aware reading time words ("in July 2022", "last week") against '
        f"`{Z_AWARE_NO_TIME}`; the interval is the paired bootstrap's of the difference.",
        "",
    ]
    rows = []
    for res in both:
        on, off = res.run(Z_AWARE), res.run(Z_AWARE_NO_TIME)
        cuts = [(c, res.select(c)) for c in res.categories()] + [("categories 1–4", res.select())]
        for label, qs in cuts:
            a = [on.per_query[q.query_id][METRIC] for q in qs]
            b = [off.per_query[q.query_id][METRIC] for q in qs]
            lo, hi = paired_interval(a, b)
            rows.append([res.split, label, str(len(qs)), f"{mean(a):.3f}", f"{mean(b):.3f}", f"[{lo:+.3f}, {hi:+.3f}]"])
    header = ["split", "questions", "n", "time words read", "off", "difference, 95 %"]
    lines += ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return [*lines, ""]
