"""What the ``brain-search bench`` commands share: the console, the output folder, the settings of
a corpus and its pool of texts."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

if TYPE_CHECKING:
    from brain_lab.bench.corpus import Pool
    from brain_lab.bench.workload import Workload
    from brain_search.config import Settings

console = Console()


def _log(msg: str) -> None:
    console.print(f"[dim]·[/dim] {msg}")


def _out(out: Path | None, name: str) -> Path:
    path = out or Path("out") / "bench" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _load_avg() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


POOLS = ("recycled", "distinct")
POOL_HELP = "recycled: LoCoMo turns, copied past 5,882; distinct: no text twice (bench/distinct.py, ~106k)"


def _settings(size: str | None, pool: str = "recycled") -> Settings:
    from brain_lab.bench.corpus import corpus_settings, parse_size
    from brain_search.config import load_settings

    if pool not in POOLS:
        raise typer.BadParameter(f"--pool must be one of {', '.join(POOLS)}")
    s = load_settings()
    prefix = "bt-perfdist" if pool == "distinct" else "bt-perfrun"
    return corpus_settings(s, parse_size(size), prefix) if size else s


def _pool(s: Settings, pool: str = "recycled") -> Pool:
    from brain_lab.bench.corpus import cached_embedder, load_pool
    from brain_lab.bench.distinct import load_distinct_pool

    def progress(n: int) -> None:
        _log(f"{n:,} texts encoded")

    if pool == "distinct":  # 103k texts: the int8 encoder's vectors (cached apart from the eval's)
        return load_distinct_pool(s, cached_embedder(s, progress=progress, int8=True))
    return load_pool(s, cached_embedder(s, progress=progress))


def _workload(
    s: Settings, host: str, folder: Path, requests: int, mix: str | None, engine: bool, pool: str
) -> tuple[Path, Workload]:
    """The load and knee commands' replayed workload, written to ``folder`` (``BRAIN_LOAD_MIX``
    when no ``--mix``)."""
    from brain_lab.bench import load as lb
    from brain_lab.bench.workload import DEFAULT_MIX

    return lb.prepare(
        s,
        host,
        folder,
        n_requests=requests,
        mix=mix or os.environ.get("BRAIN_LOAD_MIX", DEFAULT_MIX),
        engine=engine,
        pool=_pool(s, pool),
        log=_log,
    )
