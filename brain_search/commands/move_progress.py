"""The progress line of a move (`reindex`, `tenant-index`): at most one every 2 s, and the last."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console


def move_progress(console: Console, every_s: float = 2.0) -> Callable[[str, int, int], None]:
    """A ``store.moves.Progress`` printing "phase: seen of total documents (share)" on ``console``."""
    last = [float("-inf")]

    def progress(phase: str, seen: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= every_s or seen >= total:
            last[0] = now
            share = f" ({100 * seen / total:.0f} %)" if total else ""
            console.print(f"[dim]·[/dim] {phase}: {seen:,} of {total:,} documents{share}")

    return progress
