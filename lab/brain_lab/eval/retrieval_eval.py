"""Run retrieval systems over a dataset's queries and score every ranking.

Per-query values are kept, so the report can cut them by question category and by detected
intent tier (the Z-aware vs Z-naive A/B) without searching again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from brain_lab.eval.baselines import RetrievalSystem
from brain_lab.eval.datasets import ADVERSARIAL, Dataset, EvalQuery
from brain_lab.eval.metrics import mean, score_query

LOCOMO_METRICS = ("R@5", "R@10", "nDCG@10", "MRR@10")
SCIFACT_METRICS = ("nDCG@10", "R@100", "R@10", "MRR@10")
REALMEM_METRICS = LOCOMO_METRICS
METRICS_OF: dict[str, tuple[str, ...]] = {
    "locomo": LOCOMO_METRICS,
    "scifact": SCIFACT_METRICS,
    "realmem": REALMEM_METRICS,
}
"""dataset → the metrics of its tables"""
LIMIT_OF: dict[str, int] = {"locomo": 10, "scifact": 100, "realmem": 10}
"""dataset → how many results each system returns per query"""
MAIN_LABEL = {"locomo": "categories 1–4"}
"""dataset → its main set in words, where that is not every question (LoCoMo leaves adversarial out)"""


@dataclass
class SystemRun:
    system: str
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    """query id → metric → value."""
    top: dict[str, list[str]] = field(default_factory=dict)
    """query id → the first ids returned (for failure listings)."""


@dataclass
class RetrievalResult:
    dataset: str
    split: str
    metrics: tuple[str, ...]
    limit: int
    queries: list[EvalQuery]
    runs: list[SystemRun]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def systems(self) -> list[str]:
        return [r.system for r in self.runs]

    def categories(self) -> list[str]:
        return sorted({q.category for q in self.queries if q.category})

    @property
    def main_label(self) -> str:
        """What the main set (``select()``) is, in words."""
        return MAIN_LABEL.get(self.dataset, "all questions")

    def select(self, category: str | None = None, main: bool = True) -> list[EvalQuery]:
        """Queries of one category, or (``main``) every query except adversarial ones."""
        if category is not None:
            return [q for q in self.queries if q.category == category]
        return [q for q in self.queries if not (main and q.category == ADVERSARIAL)]

    def table(self, queries: Iterable[EvalQuery] | None = None) -> dict[str, dict[str, float]]:
        """system → metric → mean over ``queries`` (default: the main set)."""
        ids = [q.query_id for q in (self.select() if queries is None else queries)]
        return {run.system: {m: mean(run.per_query[i][m] for i in ids) for m in self.metrics} for run in self.runs}

    def run(self, system: str) -> SystemRun:
        return next(r for r in self.runs if r.system == system)


def evaluate_systems(
    dataset: Dataset,
    systems: Sequence[RetrievalSystem],
    metrics: Sequence[str],
    limit: int,
    progress: Callable[[int], None] | None = None,
    keep_top: int = 3,
) -> RetrievalResult:
    """Ask every system every query (``limit`` results each, over the query's pool: memories up
    to ``q.until``, time words read against ``q.reference_time``) and score the rankings."""
    runs = [SystemRun(s.name) for s in systems]
    for q in dataset.queries:
        for system, run in zip(systems, runs, strict=True):
            ranked = system.search(q.tenant_id, q.text, limit, until=q.until, reference_time=q.reference_time)
            run.per_query[q.query_id] = score_query(ranked, q.relevant, metrics)
            run.top[q.query_id] = ranked[:keep_top]
        if progress:
            progress(1)
    return RetrievalResult(
        dataset=dataset.name,
        split=dataset.split,
        metrics=tuple(metrics),
        limit=limit,
        queries=list(dataset.queries),
        runs=runs,
        counts=dict(dataset.counts),
    )
