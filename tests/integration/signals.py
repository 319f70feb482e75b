"""SIGSTOP that has taken hold: ``os.kill`` only queues the signal, and a thread of a busy
multi-threaded process (the JVM, a worker pool) can still answer a request until the group stop
reaches it. These helpers return once every thread of the process (or group) reads as stopped
in /proc, so what a test does next meets a process that is really hung."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def _threads_stopped(pid: int) -> bool:
    tasks = Path(f"/proc/{pid}/task")
    try:
        states = [(t / "stat").read_text().rsplit(")", 1)[1].split()[0] for t in tasks.iterdir()]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True  # gone: nothing of it can answer
    return all(s in ("T", "t", "Z", "X") for s in states)


def _wait(pids: list[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(_threads_stopped(p) for p in pids):
        if time.monotonic() > deadline:
            raise AssertionError(f"SIGSTOP did not stop {pids} within {timeout_s} s")
        time.sleep(0.01)


def stop(pid: int, timeout_s: float = 10.0) -> None:
    """SIGSTOP ``pid`` and wait until all its threads are stopped."""
    os.kill(pid, signal.SIGSTOP)
    _wait([pid], timeout_s)


def group_members(pgid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if os.getpgid(int(d.name)) == pgid:
                    out.append(int(d.name))
            except (ProcessLookupError, PermissionError):
                continue
    return out


def stop_group(pgid: int, timeout_s: float = 10.0) -> None:
    """SIGSTOP the process group ``pgid`` and wait until every member's threads are stopped."""
    os.killpg(pgid, signal.SIGSTOP)
    _wait(group_members(pgid), timeout_s)
