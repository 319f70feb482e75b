"""A single write's time to searchable while another tenant ingests a large batch, against its
time on an idle queue, in one run (issue 67 item 6; ``brain_search/ingest/lanes.py``).

The real parts: the API's objects (``build_state``, worker mode: the task record in the engine,
the job on Redis), one real ``brain-search worker`` process (Celery, concurrency 1, the real
encoder), the real engine. Its own index prefix, hence its own indices, queues and Redis keys,
all removed at the end.

A single write is one memory of tenant ``solo`` with ``refresh: true``; its time runs from the
call that accepts it to the first recall of tenant ``solo`` that returns it (the task's status is
polled every ``POLL_S``, then recalled). Phases:

1. warm-up: a write of each tenant (the worker loads its model, the engine compiles);
2. idle: ``singles`` single writes, one at a time, nothing else queued;
3. busy: tenant ``import`` submits ``batch`` short memories as POSTs of ``ingest_max_batch``
   (10,000 = 10 tasks of 1,000); once the worker has written the first memories of it,
   ``singles`` single writes, one every ``gap_s`` whether or not the one before has ended (as
   users write); each counts only if the batch was still running when it was submitted;
4. with ``fifo``: phase 3 again with the lanes off (every job in one lane, no slices: the single
   FIFO of before), on a worker started with those settings.
"""

from __future__ import annotations

import itertools
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brain_search.config import Settings

PREFIX = "bt-fair"
POLL_S = 0.02
SOLO, IMPORT = "solo", "import"
TOPICS = ("budget", "roadmap", "hiring", "offsite", "invoices", "the wiki", "the release", "support")


@dataclass
class Phase:
    name: str
    seconds: list[float] = field(default_factory=list)
    late: int = 0  # single writes that became searchable after the batch had ended (not counted)

    @property
    def p50(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    @property
    def p95(self) -> float:
        return percentile(self.seconds, 95)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.seconds) if self.seconds else float("nan")


@dataclass
class FairReport:
    batch: int
    singles: int
    slice_memories: int
    phases: list[Phase] = field(default_factory=list)
    batch_s: dict[str, float] = field(default_factory=dict)  # phase → seconds the whole batch took
    load_avg: list[str] = field(default_factory=list)


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile, nearest rank (pure)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[k]


def batch_texts(n: int) -> list[str]:
    """``n`` short, distinct memories (pure)."""
    return [f"import note {i}: {TOPICS[i % len(TOPICS)]} was discussed on day {i % 365}" for i in range(n)]


def fifo_settings(s: Settings) -> Settings:
    """The lanes off: every job in the bulk lane, never yielding (the single FIFO before issue 67)."""
    return s.model_copy(update={"ingest_fast_lane_max": 0, "ingest_turn_s": 1e9})


def worker_env(s: Settings) -> dict[str, str]:
    """A worker's environment for ``s`` (the settings that differ from the defaults a worker needs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update(
        HF_HUB_OFFLINE="1",
        BRAIN_INDEX_PREFIX=s.index_prefix,
        BRAIN_REDIS_URL=str(s.redis_url),
        BRAIN_OPENSEARCH_URL=s.opensearch_url,
        BRAIN_CACHE_DIR=str(s.cache_dir),
        BRAIN_INGEST_FAST_LANE_MAX=str(s.ingest_fast_lane_max),
        BRAIN_INGEST_SLICE_MEMORIES=str(s.ingest_slice_memories),
        BRAIN_INGEST_TURN_S=str(s.ingest_turn_s),
    )
    if s.job_signing_keys:
        env["BRAIN_JOB_SIGNING_KEYS"] = s.job_signing_keys.get_secret_value()
    return env


class Worker:
    """One ``brain-search worker`` process (concurrency 1) in its own process group."""

    def __init__(self, s: Settings, log_path: Path) -> None:
        cmd = [sys.executable, "-m", "brain_search.commands.cli", "worker", "--concurrency=1", "--loglevel=warning"]
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                cmd, env=worker_env(s), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


def clear_redis(s: Settings) -> None:
    import redis

    r = redis.Redis.from_url(str(s.redis_url))
    keys = list(r.scan_iter(f"{s.index_prefix}:*"))
    if keys:
        r.delete(*keys)
    r.close()


class Bench:
    """The API's objects for ``s`` and the measurements."""

    def __init__(self, s: Settings, log: Callable[[str], None]) -> None:
        from brain_search.api.app import build_state

        self.s = s
        self.log = log
        self.state = build_state(s)
        self.n = itertools.count(1)

    def _accept(self, tenant: str, texts: list[str], refresh: bool) -> tuple[str, list[str]]:
        from brain_search.ingest.models import IngestRequest

        req = IngestRequest.model_validate({"memories": [{"content": t} for t in texts], "refresh": refresh})
        acc = self.state.ingest.accept(tenant, req, self.s, self.state.graph)
        return acc.task_id, acc.memory_ids

    def status(self, tenant: str, task_id: str) -> Any:
        return self.state.ingest.queue.status(tenant, task_id)

    def wait(self, tenant: str, task_id: str, timeout_s: float) -> Any:
        return self.state.ingest.wait(tenant, task_id, timeout_s)

    def single(self) -> float:
        """One single write's seconds to searchable."""
        from brain_search.models import RecallRequest

        n = next(self.n)
        text = f"solo's note {n}: the dentist moved the check-up to room {n * 7}"
        t0 = time.perf_counter()
        task_id, ids = self._accept(SOLO, [text], refresh=True)
        deadline = t0 + 600
        while self.status(SOLO, task_id).state.value not in ("succeeded", "failed"):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"single write {task_id} not done after 600 s")
            time.sleep(POLL_S)
        while True:
            hits = self.state.recall(SOLO, RecallRequest(query=text, limit=5)).results
            if ids[0] in {h.id for h in hits}:
                break
            if time.perf_counter() > deadline:
                raise RuntimeError(f"single write {task_id} succeeded and is not found")
            time.sleep(POLL_S)
        return time.perf_counter() - t0

    def idle(self, singles: int) -> Phase:
        phase = Phase("idle")
        for _ in range(singles):
            phase.seconds.append(self.single())
            time.sleep(0.2)
        self.log(f"idle: {', '.join(f'{x:.2f}' for x in phase.seconds)} s")
        return phase

    def busy(self, name: str, batch: int, singles: int, gap_s: float) -> tuple[Phase, float]:
        """``singles`` single writes while tenant ``import`` ingests ``batch`` memories; the phase and
        the seconds the whole batch took."""
        texts = batch_texts(batch)
        step = self.s.ingest_max_batch
        t0 = time.perf_counter()
        tasks = [self._accept(IMPORT, texts[i : i + step], refresh=False)[0] for i in range(0, batch, step)]

        def running() -> bool:
            return any(self.status(IMPORT, t).state.value not in ("succeeded", "failed") for t in tasks)

        while self.written(IMPORT) == 0:  # the worker is on the batch
            if time.perf_counter() - t0 > 600:
                raise RuntimeError("the batch did not start in 600 s")
            time.sleep(0.05)
        phase = Phase(name)
        with ThreadPoolExecutor(max_workers=singles) as pool:
            started: list[tuple[Future[float], bool]] = []
            for _ in range(singles):
                started.append((pool.submit(self.single), running()))
                time.sleep(gap_s)
            for future, during in started:
                seconds = future.result()
                if during:
                    phase.seconds.append(seconds)
                else:
                    phase.late += 1
        self.log(f"{name}: {', '.join(f'{x:.2f}' for x in phase.seconds)} s; {self.written(IMPORT):,} written")
        for t in tasks:
            status = self.wait(IMPORT, t, 3600)
            if status.state.value != "succeeded" or status.indexed != status.submitted:
                raise RuntimeError(f"batch task {t} ended {status.state.value}: {status}")
        return phase, time.perf_counter() - t0

    def written(self, tenant: str) -> int:
        """The tenant's memories searchable now."""
        alias = self.s.memories_alias
        self.state.client.indices.refresh(index=alias)
        body = {"query": {"term": {"tenant_id": tenant}}}
        return int(self.state.client.count(index=alias, body=body)["count"])

    def warm_up(self) -> None:
        self._accept(IMPORT, batch_texts(50), refresh=True)
        for _ in range(2):
            self.single()

    def close(self) -> None:
        self.state.close()


def run_fair_ingest(
    s: Settings,
    folder: Path,
    *,
    batch: int,
    singles: int,
    gap_s: float,
    fifo: bool,
    log: Callable[[str], None] = print,
) -> FairReport:
    """The phases above on ``s`` (its own prefix, worker mode); removes its indices and keys after."""
    from brain_search.ingest.lanes import LanePicker
    from brain_search.store.client import make_client
    from brain_search.store.templates import delete_indices

    client = make_client(s)
    delete_indices(client, s)
    clear_redis(s)
    rep = FairReport(batch=batch, singles=singles, slice_memories=s.ingest_slice_memories)
    rep.load_avg.append("/".join(f"{x:.2f}" for x in os.getloadavg()))
    bench = Bench(s, log)
    worker = Worker(s, folder / "worker.log")
    try:
        log("warm-up: the worker loads its model")
        bench.warm_up()
        rep.phases.append(bench.idle(singles))
        phase, seconds = bench.busy("busy, lanes", batch, singles, gap_s)
        rep.phases.append(phase)
        rep.batch_s[phase.name] = seconds
        log(f"the batch: {batch:,} memories in {seconds:.0f} s ({batch / seconds:.0f}/s)")
        if fifo:
            worker.stop()
            off = fifo_settings(s)
            worker = Worker(off, folder / "worker-fifo.log")
            bench.state.ingest.queue.lanes = LanePicker(off)  # type: ignore[attr-defined]
            bench.warm_up()
            phase, seconds = bench.busy("busy, one FIFO", batch, singles, gap_s)
            rep.phases.append(phase)
            rep.batch_s[phase.name] = seconds
            log(f"the batch, one FIFO: {batch:,} memories in {seconds:.0f} s ({batch / seconds:.0f}/s)")
        rep.load_avg.append("/".join(f"{x:.2f}" for x in os.getloadavg()))
        return rep
    finally:
        worker.stop()
        bench.close()
        delete_indices(client, s)
        clear_redis(s)
