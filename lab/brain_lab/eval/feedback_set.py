"""A tenant's own judgements as a labelled evaluation set (``brain-search feedback-eval``).

Every kept recall of the tenant with results marked becomes one labelled query: its query text and
request (focus, z_value, nodes …), the memories marked relevant (grade 1) and those marked not
(kept as judged, never counted as relevant). Replaying them through a ranking gives R@10 and
MRR@10 on the tenant's own queries, beside the ranking the user judged (the order shown then).
A query whose marks are all "not relevant" has no relevant memory: R@10 and MRR are undefined for
it, so it is counted and left out. Nothing leaves the tenant: the set is read with its id, replayed
against its memories, and written only where ``--out`` says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from brain_lab.eval.metrics import mean, recall_at_k, reciprocal_rank

METRIC_NAMES = ("R@10", "MRR@10")


@dataclass(frozen=True)
class LabelledQuery:
    recall_id: str
    query: str
    request: dict[str, Any]
    relevant: dict[str, int]
    """memory id → grade (1: marked relevant)"""
    judged_not: list[str]
    shown: list[str]
    """the ids in the order the user saw them (the ranking that was judged)"""
    intent: str = ""
    rating: int | None = None


@dataclass
class FeedbackSet:
    queries: list[LabelledQuery] = field(default_factory=list)
    no_relevant: int = 0
    """recalls with marks, none of them relevant (left out)"""

    def jsonl(self) -> Iterable[str]:
        import json

        for q in self.queries:
            yield json.dumps(asdict(q), ensure_ascii=False)


def labelled_set(records: Iterable[dict[str, Any]]) -> FeedbackSet:
    """The labelled queries of feedback records (pure; the fields of ``queries.judged_body``)."""
    out = FeedbackSet()
    for rec in records:
        marks = rec.get("marks") or []
        relevant = {m["memory_id"]: 1 for m in marks if m["relevant"]}
        if not relevant:
            out.no_relevant += 1
            continue
        shown = [r["id"] for r in sorted(rec.get("results") or [], key=lambda r: r["rank"])]
        out.queries.append(
            LabelledQuery(
                recall_id=rec["recall_id"],
                query=rec["query"],
                request=dict(rec.get("request") or {}),
                relevant=relevant,
                judged_not=[m["memory_id"] for m in marks if not m["relevant"]],
                shown=shown,
                intent=rec.get("intent", ""),
                rating=rec.get("rating"),
            )
        )
    return out


def scores(ranked: list[str], relevant: dict[str, int]) -> dict[str, float]:
    return {"R@10": recall_at_k(ranked, relevant, 10), "MRR@10": reciprocal_rank(ranked, relevant, 10)}


def replay(labelled: FeedbackSet, rank: Callable[[LabelledQuery], list[str]]) -> dict[str, dict[str, float]]:
    """Mean R@10 and MRR@10 of the ranking the user judged (``as judged``) and of ``rank`` (the
    current ranking: a query → ranked memory ids) over the labelled queries."""
    judged = [scores(q.shown, q.relevant) for q in labelled.queries]
    current = [scores(rank(q), q.relevant) for q in labelled.queries]
    return {
        "as judged": {m: mean(s[m] for s in judged) for m in METRIC_NAMES},
        "current": {m: mean(s[m] for s in current) for m in METRIC_NAMES},
    }
