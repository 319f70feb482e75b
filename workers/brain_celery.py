"""The Celery app's type: the Settings it was built from and, once a process runs its tasks, that
process's ``WorkerRuntime``. Apart from ``app.py`` (which builds it and registers the tasks) so
that ``tasks.py`` can name it without importing the module that imports it."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from celery import Celery

from brain_search.config import Settings

if TYPE_CHECKING:
    from workers.runtime import WorkerRuntime


class BrainCelery(Celery):
    """A Celery app that carries the Settings it was built from and, once a process runs its
    tasks, that process's ``WorkerRuntime`` (model, clients), built from those settings."""

    settings: Settings
    _runtime: WorkerRuntime | None
    _runtime_lock: threading.Lock

    def runtime(self) -> WorkerRuntime:
        """This process's runtime for this app's settings: built on first use (in a prefork
        child, never in the parent), then the same one."""
        with self._runtime_lock:
            if self._runtime is None:
                from workers.runtime import build_runtime

                self._runtime = build_runtime(self.settings)
            return self._runtime
