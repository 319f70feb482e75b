"""CLI: `brain-search eval` — the evaluation harness on LoCoMo, BEIR SciFact and RealMem (see
``brain_search/eval``): retrieval quality of every system, exact-match precision, intent accuracy.
Writes a Markdown report with plots and ``results.json`` into ``--out``."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from brain_lab.paths import EVAL_REPORT, OUT

if TYPE_CHECKING:
    from brain_lab.eval.report import EvalReport
    from brain_lab.eval.runner import EvalOptions, EvalRunner
    from brain_search.config import Settings

console = Console()


def _csv(value: str, allowed: tuple[str, ...], what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise typer.BadParameter(f"{what} must be a comma list of {', '.join(allowed)}")
    return items


def eval_cmd(
    parts: str = typer.Option("retrieval,exact,intent,z", "--parts", help="comma list: retrieval, exact, intent, z"),
    datasets: str = typer.Option("locomo,scifact,realmem", "--datasets", help="comma list: locomo, scifact, realmem"),
    split: str = typer.Option("both", "--split", help="dev | test | both (test = the held-out split)"),
    quick: bool = typer.Option(
        False,
        "--quick",
        help="a small subset (2 conversations, 80 claims, 2 RealMem personas × 40 queries, 60 phrases)",
    ),
    out: Path = typer.Option(
        None, "--out", help="report folder (default lab/reports/eval; out/eval-quick with --quick)"
    ),
    index_prefix: str = typer.Option("bt-evalrun", "--index-prefix", help="indices are <prefix>-<dataset>-…"),
    phrases: int = typer.Option(600, "--phrases", min=10, help="exact-match phrases per split"),
    brain: bool = typer.Option(True, "--brain/--no-brain", help="include Brain Z-naive and Z-aware"),
    reindex: bool = typer.Option(False, "--reindex", help="rebuild the evaluation indices even if current"),
    fusion_field: str = typer.Option(
        "content.en", "--fusion-field", help="BM25 field of the fusion baselines (content.en won on dev)"
    ),
    fit: bool = typer.Option(
        False, "--fit", help="learn the ranking parameters on the dev split (no report); writes out/fit/fit.json"
    ),
    query_int8: bool = typer.Option(
        False,
        "--query-int8",
        help="Brain systems and intent detection encode queries with the API's int8 model (baselines: fp32)",
    ),
    references: Path = typer.Option(
        None,
        "--references",
        help="--fit: the results.json whose dev baselines the fit must beat (default lab/reports/eval's; "
        "another encoder's own report for that encoder)",
    ),
) -> None:
    """Evaluate retrieval (LoCoMo, SciFact, RealMem), exact-match precision and intent detection."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from brain_lab.eval.report import write_report
    from brain_lab.eval.runner import DATASETS, PARTS, EvalOptions
    from brain_search.config import load_settings

    if split not in ("dev", "test", "both"):
        raise typer.BadParameter("--split must be dev, test or both")
    if fusion_field not in ("content", "content.en"):
        raise typer.BadParameter("--fusion-field must be content or content.en")
    options = EvalOptions(
        parts=_csv(parts, PARTS, "--parts"),
        datasets=_csv(datasets, DATASETS, "--datasets"),
        splits=("dev", "test") if split == "both" else (split,),  # type: ignore[arg-type]
        quick=quick,
        phrases=phrases,
        brain=brain,
        reindex=reindex,
        fusion_field=fusion_field,
        query_int8=query_int8,
    )
    settings = load_settings(index_prefix=index_prefix + ("-quick" if quick else ""))
    if fit:
        _fit(settings, options, out or Path("out/fit"), references)
        return
    out = out or (OUT / "eval-quick" if quick else EVAL_REPORT)
    command = "brain-search " + " ".join(shlex.quote(a) for a in sys.argv[1:])

    with _runner(settings, options) as runner:
        report = runner.run(command)
    path = write_report(report, out)
    _summary(report)
    console.print(f"report: {path}")


@contextmanager
def _runner(settings: Settings, options: EvalOptions) -> Iterator[EvalRunner]:
    """An EvalRunner whose progress bars and log lines go to the console."""
    from brain_lab.eval.runner import EvalRunner
    from brain_search.store.client import make_client

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as progress:

        def bar(description: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(description, total=total)
            return lambda n: progress.advance(task, n)

        yield EvalRunner(make_client(settings), settings, options, bar, log=lambda m: progress.console.print(f"· {m}"))


def _summary(report: EvalReport) -> None:
    from brain_lab.eval.report import losses

    for res in report.retrieval:
        table = Table(title=f"{res.dataset} {res.split} ({len(res.select())} queries)")
        table.add_column("system")
        for m in res.metrics:
            table.add_column(m, justify="right")
        for s, row in res.table().items():
            table.add_row(s, *(f"{row[m]:.3f}" for m in res.metrics))
        console.print(table)
    for ex in report.exact:
        console.print(f"exact match {ex.split}: " + ", ".join(f"{s} {ex.precision(s):.3f}" for s in ex.hits))
    for ir in report.intent:
        console.print(f"intent {ir.split}: accuracy {ir.accuracy:.3f}, within one tier {ir.within_one:.3f} (n={ir.n})")
    for line in losses(report):
        console.print(f"[yellow]Z-aware loses:[/yellow] {line}")


def _fit(settings: Settings, options: EvalOptions, out: Path, references: Path | None = None) -> None:
    """``--fit``: dev-split candidates once, then coordinate ascent over ``fit.GRID``."""
    import json
    from dataclasses import asdict
    from datetime import UTC, datetime

    from brain_lab.eval import fit
    from brain_lab.eval.runner import _git_commit
    from brain_search.retrieval.intent.model import make_intent_detector
    from brain_search.retrieval.score.ranking import RankingParams

    with _runner(settings, options) as runner:
        for name in runner.options.datasets:
            runner.load(name)  # the eval indices, built if missing
        queries = fit.collect(
            runner.client, runner.settings, runner.query_side, runner.data_dir, runner.options.datasets, runner.progress
        )
        # the service's detector, with the query vectors the recall computes
        intents = fit.intents_of(
            queries, make_intent_detector(settings.intent_model, settings.embedding_model), runner.query_side.encode
        )
    fit.save(queries, out / "dev-candidates.jsonl")
    start = RankingParams()
    refs = fit.dev_references(references or fit.REPORT_RESULTS)
    console.print(f"dev references (best baseline per metric, {fit.REPORT_RESULTS}): {refs or 'none'}")
    # a refit from the shipped (already learned) numbers: no step may lower any dataset's metric
    best, scores = fit.fit(queries, start, log=console.print, references=refs, intents=intents, monotone=True)
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git_commit(),
        "split": "dev (LoCoMo conversations 0-6, categories 1-4; SciFact train qrels"
        + ("; RealMem personas 1-5" if "realmem" in options.datasets else "")
        + ")",
        "queries": len(queries),
        "start": asdict(start),
        "references": refs,
        "intent_model": settings.intent_model,
        "monotone": True,
        "start_scores": fit.score(queries, start, intents, refs),
        "best": asdict(best),
        "best_scores": scores,
    }
    (out / "fit.json").write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"learned on dev: {best}")
    console.print(f"written: {out / 'fit.json'}")
