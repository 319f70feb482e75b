"""CLI: `brain-search feedback-eval --tenant T`: the tenant's stored feedback as a labelled set,
replayed against the current ranking (R@10 / MRR@10 on the rated queries). See
``brain_lab/eval/feedback_set.py``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from brain_lab.eval.feedback_set import FeedbackSet
    from brain_search.retrieval.pipeline import Retriever

console = Console()


def feedback_eval(
    tenant: str = typer.Option(..., "--tenant", help="whose feedback, replayed against whose memories"),
    out: Path = typer.Option(None, "--out", help="also write the labelled set here (JSON Lines)"),
    limit: int = typer.Option(10, "--limit", min=10, max=100, help="results per replayed recall"),
) -> None:
    """Turn a tenant's feedback into a labelled set and print R@10 / MRR@10 of the ranking that was
    judged and of the current one, on the queries with a result marked relevant."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from brain_lab.eval.feedback_set import labelled_set
    from brain_search.config import load_settings
    from brain_search.encoders.factory import make_query_embedder
    from brain_search.encoders.queries import QueryCache
    from brain_search.feedback.store import FeedbackStore
    from brain_search.graph.store import GraphStore
    from brain_search.retrieval.pipeline import Retriever
    from brain_search.store.cache_budget import cache_budgets
    from brain_search.store.client import make_client

    settings = load_settings()
    client = make_client(settings)
    labelled = labelled_set(FeedbackStore(client, settings).judged(tenant))
    if not labelled.queries:
        left = labelled.no_relevant
        console.print(f"tenant {tenant}: no kept recall has a result marked relevant ({left} marked, none relevant)")
        raise typer.Exit(1)
    embedder = make_query_embedder(settings)
    cache = QueryCache(embedder, cache_budgets(settings).query_vectors)
    retriever = Retriever(client, settings, cache, GraphStore(client, settings))
    table = run(labelled, retriever, tenant, limit)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(line + "\n" for line in labelled.jsonl()))
        console.print(f"labelled set: {out}")
    _print(table, len(labelled.queries), labelled.no_relevant)


def run(labelled: FeedbackSet, retriever: Retriever, tenant: str, limit: int = 10) -> dict[str, dict[str, float]]:
    """Replay ``labelled`` (a FeedbackSet) through ``retriever`` for ``tenant`` (the request each
    query was made with, its limit raised to ``limit``)."""
    from brain_lab.eval.feedback_set import LabelledQuery, replay
    from brain_search.models import RecallRequest

    def rank(q: LabelledQuery) -> list[str]:
        wanted = max(limit, int(q.request.get("limit", 10)))
        request = {**q.request, "query": q.query, "limit": wanted, "tiered": False}
        return [r.id for r in retriever.recall(tenant, RecallRequest.model_validate(request)).results]

    return replay(labelled, rank)


def _print(table: dict[str, dict[str, float]], n: int, left_out: int) -> None:
    t = Table(title=f"the tenant's rated queries: {n} (left out, none marked relevant: {left_out})")
    t.add_column("ranking")
    for m in ("R@10", "MRR@10"):
        t.add_column(m, justify="right")
    for name, row in table.items():
        t.add_row(name, f"{row['R@10']:.3f}", f"{row['MRR@10']:.3f}")
    console.print(t)
