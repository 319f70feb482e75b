"""The worker's liveness signal for Kubernetes: a file touched by the worker's own event loop.

A timer on the main process's loop touches ``worker_heartbeat_file`` every
``worker_heartbeat_interval_s``; the chart's probes check its age (``find -mmin``). A worker whose
loop is stuck (or stopped: SIGSTOP) stops touching it and is restarted; one still loading its
model has no file yet, which the startup probe waits for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery import bootsteps


def touch(path: str) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.touch()


class Heartbeat(bootsteps.StartStopStep):
    """Worker bootstep: ``touch`` on the worker's timer (the main loop), from start to stop."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.tref: Any = None

    def start(self, worker: Any) -> None:
        s = worker.app.settings
        if not s.worker_heartbeat_file:
            return
        touch(s.worker_heartbeat_file)
        self.tref = worker.timer.call_repeatedly(s.worker_heartbeat_interval_s, touch, (s.worker_heartbeat_file,))

    def stop(self, worker: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None
