#!/usr/bin/env python
"""Document-embedding benchmark (not a test): the worker's embedder against the one it replaced,
side by side in one process on LoCoMo turns, variants in a new random order each round so they
share the machine's noise.

    .venv/bin/python lab/scripts/bench_document_encode.py                 # 3,000 turns, 3 rounds

Variants (calls of 500 texts, as the ingest pipeline makes them):

- ``st-64``: sentence-transformers' ONNX backend, onnxruntime's default threads (one spinning
  thread per core), batches of 64: the worker's embedder before 2026-12-03, the baseline;
- ``onnx-64`` / ``onnx-16``: ``OnnxQueryEmbedder`` in fp32 (onnxruntime called directly), default
  threads, batches of 64 / 16;
- ``sessions-16``: what the worker uses now (``make_document_embedder`` with ``document_sessions``):
  one-thread sessions, one per usable CPU (at most 4), taking the next batch of 16 in turn.

Prints memories/s and CPU ms per memory of each, the ratio to ``st-64`` of the same round, and
the largest difference of any vector component from ``st-64``'s.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain_lab.eval.datasets import resolve_data_dir

from brain_search.config import load_settings
from brain_search.encoders.embedding import OnnxQueryEmbedder
from brain_search.encoders.factory import document_sessions, make_document_embedder, make_embedder
from brain_search.ingest.sources import read_locomo

Encode = Callable[[Sequence[str]], np.ndarray]


def run(encode: Encode, texts: list[str], call: int) -> tuple[float, float, np.ndarray]:
    """(memories/s, CPU ms per memory, the vectors) of one pass over ``texts``."""
    t, cpu = time.perf_counter(), time.process_time()
    vectors = np.concatenate([encode(texts[i : i + call]) for i in range(0, len(texts), call)])
    return len(texts) / (time.perf_counter() - t), 1000 * (time.process_time() - cpu) / len(texts), vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000, help="LoCoMo turns")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--call", type=int, default=500, help="texts per encode call (bulk_max_docs)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    s = load_settings()
    path = resolve_data_dir(s) / "locomo" / "locomo10.json"
    texts = [r.memory.content for r in read_locomo(path) if r.memory][: a.n]
    sessions = document_sessions(s)
    variants: dict[str, Encode] = {
        "st-64": make_embedder(s.model_copy(update={"embedding_batch_size": 64})).encode,
        "onnx-64": OnnxQueryEmbedder(s.models_dir, intra_op_threads=0, batch_size=64).encode,
        "onnx-16": OnnxQueryEmbedder(s.models_dir, intra_op_threads=0, batch_size=16).encode,
        f"sessions-16 ({sessions})": make_document_embedder(
            s.model_copy(update={"embedding_batch_size": 16}), sessions=sessions
        ).encode,
    }
    for encode in variants.values():
        encode(texts[:64])  # warm-up
    print(f"{len(texts)} LoCoMo turns, mean {sum(map(len, texts)) / len(texts):.0f} characters; calls of {a.call}")
    rng = random.Random(a.seed)
    for r in range(a.rounds):
        order = list(variants)
        rng.shuffle(order)
        got = {name: run(variants[name], texts, a.call) for name in order}
        base_rate, base_cpu, base_vectors = got["st-64"]
        print(f"round {r + 1} (order {', '.join(order)})")
        for name, (rate, cpu, vectors) in got.items():
            diff = float(np.abs(vectors - base_vectors).max())
            print(
                f"  {name:18s} {rate:6.1f} memories/s ({rate / base_rate:.2f}x)  CPU {cpu:5.1f} ms per memory"
                f" ({cpu / base_cpu:.2f}x)  max |diff| {diff:.1e}"
            )


if __name__ == "__main__":
    main()
