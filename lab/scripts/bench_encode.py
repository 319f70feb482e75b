#!/usr/bin/env python
"""Query-encoding benchmark (not a test): the API's query encoders side by side in one process,
on real LoCoMo questions, variants interleaved in random order so they share the machine's noise.

    PYTHONPATH=. .venv/bin/python lab/scripts/bench_encode.py                 # all sections
    PYTHONPATH=. .venv/bin/python lab/scripts/bench_encode.py --rates 50,100 --rounds 3

Variants: ``st`` = sentence-transformers' ONNX backend with 1 intra-op thread (the encoder before
this script existed), ``fp32`` / ``int8`` = ``OnnxQueryEmbedder`` (onnxruntime called directly),
``*-2t`` = 2 intra-op threads, ``int8-batch`` = int8 behind a micro-batcher that gathers the
queries arriving within ``--batch-wait-ms`` and encodes them as one batch (kept here only as the
measurement; the service does not batch). Sections:

1. one query at a time: latency p50 / p95;
2. Poisson arrivals at each ``--rates`` value into a 40-thread pool (uvicorn's pool size), i.e.
   concurrent encodes: latency p50 / p95 and CPU ms per query (process CPU over the window);
3. latency against query length (word pieces), fp32 and int8.

Every figure is also printed as a ratio to ``st`` measured in the same round.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain_lab.eval.datasets import resolve_data_dir

from brain_search.config import load_settings
from brain_search.encoders.embedding import OnnxQueryEmbedder
from brain_search.encoders.factory import make_embedder

Encode = Callable[[Sequence[str]], np.ndarray]


class MicroBatcher:
    """Gathers single-text encodes that arrive within ``wait_s`` of the first into one batch."""

    def __init__(self, encode: Encode, wait_s: float, max_batch: int = 16) -> None:
        self.encode, self.wait_s, self.max_batch = encode, wait_s, max_batch
        self.queue: queue.Queue[tuple[str, Future[np.ndarray]]] = queue.Queue()
        self.sizes: list[int] = []
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            items = [self.queue.get()]
            deadline = time.perf_counter() + self.wait_s
            while len(items) < self.max_batch:
                left = deadline - time.perf_counter()
                try:
                    items.append(self.queue.get(timeout=left) if left > 0 else self.queue.get_nowait())
                except queue.Empty:
                    break
            self.sizes.append(len(items))
            vecs = self.encode([t for t, _ in items])
            for i, (_, fut) in enumerate(items):
                fut.set_result(vecs[i : i + 1])

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        fut: Future[np.ndarray] = Future()
        self.queue.put((texts[0], fut))
        return fut.result()


def poisson(encode: Encode, texts: list[str], rate: float, seconds: float, pool: ThreadPoolExecutor) -> dict:
    lat: list[float] = []
    futures = []
    it = iter(texts)

    def one(text: str, due: float) -> None:
        encode([text])
        lat.append((time.perf_counter() - due) * 1000)

    cpu0, t0 = time.process_time(), time.perf_counter()
    due = t0
    while due - t0 < seconds:
        due += random.expovariate(rate)
        pause = due - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        futures.append(pool.submit(one, next(it), due))
    for f in futures:
        f.result()
    cpu = (time.process_time() - cpu0) * 1000 / len(lat)
    return {"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95)), "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300, help="queries in the one-at-a-time pass")
    ap.add_argument("--rates", default="50,100")
    ap.add_argument("--seconds", type=float, default=6.0, help="per variant, rate and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-wait-ms", type=float, default=1.5)
    args = ap.parse_args()

    s = load_settings()
    data = json.loads((resolve_data_dir(s) / "locomo" / "locomo10.json").read_text())
    questions = [q["question"] for c in data for q in c["qa"]]
    random.seed(7)
    random.shuffle(questions)

    st = make_embedder(s, 1)
    fp32 = OnnxQueryEmbedder(s.models_dir, intra_op_threads=1)
    int8 = OnnxQueryEmbedder(s.models_dir, intra_op_threads=1, quantized=True)
    variants: dict[str, Encode] = {
        "st": st.encode,
        "fp32": fp32.encode,
        "int8": int8.encode,
        "fp32-2t": OnnxQueryEmbedder(s.models_dir, intra_op_threads=2).encode,
        "int8-2t": OnnxQueryEmbedder(s.models_dir, intra_op_threads=2, quantized=True).encode,
        "int8-batch": MicroBatcher(
            OnnxQueryEmbedder(s.models_dir, intra_op_threads=1, quantized=True).encode, args.batch_wait_ms / 1000
        ),
    }
    for enc in variants.values():
        enc(["warm up"])
    print(f"load average at start: {os.getloadavg()[0]:.1f}")

    # 1. one at a time
    times: dict[str, list[float]] = {k: [] for k in variants}
    for text in questions[: args.n]:
        for k in random.sample(list(variants), len(variants)):
            t = time.perf_counter()
            variants[k]([text])
            times[k].append((time.perf_counter() - t) * 1000)
    base = np.percentile(times["st"], [50, 95])
    print(f"\n1. one query at a time ({args.n} LoCoMo questions); ratio to st")
    print("| variant | p50 ms | p95 ms | p50 ÷ st | p95 ÷ st |\n|---|---|---|---|---|")
    for k, v in times.items():
        p = np.percentile(v, [50, 95])
        print(f"| {k} | {p[0]:.2f} | {p[1]:.2f} | {p[0] / base[0]:.2f} | {p[1] / base[1]:.2f} |")

    # 2. Poisson arrivals, concurrent encodes
    pool = ThreadPoolExecutor(40)
    texts = questions[args.n :] * 20
    for rate in [float(r) for r in args.rates.split(",")]:
        rows: dict[str, list[dict]] = {k: [] for k in variants}
        for _ in range(args.rounds):
            for k in random.sample(list(variants), len(variants)):
                random.shuffle(texts)
                rows[k].append(poisson(variants[k], texts, rate, args.seconds, pool))
        print(f"\n2. Poisson {rate:g}/s, {args.rounds} × {args.seconds:g} s per variant (medians of rounds)")
        print("| variant | p50 ms | p95 ms | CPU ms/query | p95 ÷ st | CPU ÷ st |\n|---|---|---|---|---|---|")
        med = {k: {m: float(np.median([r[m] for r in v])) for m in ("p50", "p95", "cpu")} for k, v in rows.items()}
        for k, m in med.items():
            print(
                f"| {k} | {m['p50']:.1f} | {m['p95']:.1f} | {m['cpu']:.2f} "
                f"| {m['p95'] / med['st']['p95']:.2f} | {m['cpu'] / med['st']['cpu']:.2f} |"
            )
    batcher = variants["int8-batch"]
    if isinstance(batcher, MicroBatcher) and batcher.sizes:
        print(f"micro-batcher: mean batch {np.mean(batcher.sizes):.2f}, max {max(batcher.sizes)}")

    # 3. latency against query length
    print("\n3. one query at a time against its length (word pieces), ms p50")
    print("| tokens | st | fp32 | int8 |\n|---|---|---|---|")
    word = "memory "
    for n in (8, 16, 32, 64, 128, 254):
        text = (word * n).strip()
        res = {}
        for k in ("st", "fp32", "int8"):
            lat = []
            for _ in range(30):
                t = time.perf_counter()
                variants[k]([text])
                lat.append((time.perf_counter() - t) * 1000)
            res[k] = float(np.median(lat))
        print(f"| {n + 2} | {res['st']:.2f} | {res['fp32']:.2f} | {res['int8']:.2f} |")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
