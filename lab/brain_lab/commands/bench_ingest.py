"""CLI: ``brain-search bench fair-ingest`` (issue 67 item 6): a single write's time to searchable
beside another tenant's large batch, against an idle queue, in one run (``bench/fair_ingest.py``).
``add_ingest_commands`` puts it on the bench app."""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict
from pathlib import Path

import typer
from rich.table import Table

from brain_lab.commands.bench_common import _load_avg, _log, _out, console


def fair_ingest(
    batch: int = typer.Option(10_000, min=1, help="memories the other tenant ingests (short ones)"),
    singles: int = typer.Option(20, min=1, help="single writes measured per phase"),
    gap_s: float = typer.Option(2.0, min=0.0, help="seconds between single writes beside the batch"),
    fifo: bool = typer.Option(False, help="also measure with the lanes off (one FIFO, as before issue 67)"),
    redis_url: str = typer.Option(None, help="Redis (default: BRAIN_REDIS_URL, else the local stack's)"),
    out: Path = typer.Option(None, help="output folder"),
) -> None:
    """One tenant's single write (refresh, then recalled) while another tenant ingests ``--batch``
    memories, on a real worker process and the real engine, against the same write on an idle
    queue: median and p95 seconds to searchable, and their ratio (goal ≤ 2)."""
    from pydantic import SecretStr

    from brain_lab.bench.fair_ingest import PREFIX, run_fair_ingest
    from brain_search.config import load_settings
    from brain_search.local.redis_server import LocalRedis

    s = load_settings()
    url = redis_url or s.redis_url or LocalRedis(s).url
    s = s.model_copy(
        update={"index_prefix": PREFIX, "redis_url": url, "job_signing_keys": SecretStr(secrets.token_hex(16))}
    )
    folder = _out(out, "fair-ingest")
    _log(f"prefix {PREFIX}, Redis {url}, slice {s.ingest_slice_memories} memories; load avg {_load_avg()}")
    rep = run_fair_ingest(s, folder, batch=batch, singles=singles, gap_s=gap_s, fifo=fifo, log=_log)
    idle = rep.phases[0]
    console.print(
        f"a single write's seconds to searchable, idle and beside {rep.batch:,} memories of another tenant"
        f" (slices of {rep.slice_memories}); load avg {rep.load_avg[0]} → {rep.load_avg[-1]}"
    )
    t = Table()
    for h in ("phase", "n", "late", "p50 s", "p95 s", "mean s", "p50 ×", "p95 ×", "batch s", "/s"):
        t.add_column(h, justify="left" if h == "phase" else "right")
    for p in rep.phases:
        took = rep.batch_s.get(p.name)
        t.add_row(
            p.name,
            str(len(p.seconds)),
            str(p.late),
            f"{p.p50:.2f}",
            f"{p.p95:.2f}",
            f"{p.mean:.2f}",
            f"{p.p50 / idle.p50:.2f}",
            f"{p.p95 / idle.p95:.2f}",
            f"{took:.0f}" if took else "",
            f"{rep.batch / took:.0f}" if took else "",
        )
    console.print(t)
    for busy in rep.phases[1:]:
        console.print(
            f"{busy.name} ÷ idle: p50 {busy.p50 / idle.p50:.2f}×, p95 {busy.p95 / idle.p95:.2f}×"
            + (" (goal ≤ 2)" if busy is rep.phases[1] else "")
        )
    (folder / "fair_ingest.json").write_text(
        json.dumps({**asdict(rep), "phases": [{**asdict(p), "p50": p.p50, "p95": p.p95} for p in rep.phases]}, indent=2)
    )
    console.print(f"results in {folder}")


def add_ingest_commands(app: typer.Typer) -> None:
    """``fair-ingest`` as a command of ``app`` (the bench app)."""
    app.command("fair-ingest")(fair_ingest)
