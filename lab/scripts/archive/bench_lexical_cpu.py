"""CPU per recall of the lexical options, in one run on the evaluation's indices: the engine's own
BM25 over the whole index (``BRAIN_LEXICAL_STATS=index``) against BM25 over the tenant's own
statistics (``tenant``, the default: a script score per term, the count beside the search).

Sequential recalls in this process (query vectors cached by a first pass, so the encoder is not
counted); API CPU is this process's CPU time, engine CPU the node's (its process's CPU from
/proc, so the node must run on this machine), both per recall; the options interleave question
by question, two rounds. Run it on a quiet machine (nothing else searching the node).

    PYTHONPATH=. .venv/bin/python lab/scripts/bench_lexical_cpu.py [--dataset realmem] [-n 300]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.runner import EvalOptions, EvalRunner

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client

MODES = ("index", "tenant")


TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")


def node_pids(client: object) -> list[int]:
    """The node processes (on this machine: the benchmark reads their CPU from /proc)."""
    info = client.nodes.info(metric="process")  # type: ignore[attr-defined]
    return [int(n["process"]["id"]) for n in info["nodes"].values()]


def node_cpu_ms(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) * TICK_MS  # utime + stime
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="realmem", choices=("locomo", "realmem", "scifact"))
    ap.add_argument("-n", type=int, default=300, help="test questions")
    args = ap.parse_args()
    settings = load_settings(index_prefix="bt-evalrun")
    client = make_client(settings)
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=(args.dataset,)), log=print)
    questions = runner.split_of(args.dataset, "test").queries[: args.n]
    runner.embedder.encode([q.text for q in questions])
    base = runner.indexed[args.dataset].settings
    cache = QueryCache(runner.embedder, 8192)
    retrievers = {m: Retriever(client, base.model_copy(update={"lexical_stats": m}), cache) for m in MODES}

    def req(q: object) -> RecallRequest:
        return RecallRequest(query=q.text, limit=10, until=q.until, time_words=False)  # type: ignore[attr-defined]

    pids = node_pids(client)
    for m in MODES:  # warm-up: vectors cached, scripts compiled, every word counted once
        for q in questions:
            retrievers[m].recall(q.tenant_id, req(q))
    api: dict[str, float] = dict.fromkeys(MODES, 0.0)
    engine: dict[str, float] = dict.fromkeys(MODES, 0.0)
    wall: dict[str, float] = dict.fromkeys(MODES, 0.0)
    n = 0
    for _ in range(2):
        for q in questions:
            n += 1
            for m in MODES:
                e0, c0, t0 = node_cpu_ms(pids), time.process_time(), time.perf_counter()
                retrievers[m].recall(q.tenant_id, req(q))
                t1, c1 = time.perf_counter(), time.process_time()
                engine[m] += node_cpu_ms(pids) - e0
                api[m] += (c1 - c0) * 1000
                wall[m] += (t1 - t0) * 1000
    print(f"{args.dataset} test, {len(questions)} questions × 2 rounds, sequential")
    for m in MODES:
        print(f"{m:>6}: API CPU {api[m] / n:.2f} ms, engine CPU {engine[m] / n:.2f} ms, wall {wall[m] / n:.2f} ms")
    print(f"tenant / index engine CPU: {engine['tenant'] / max(engine['index'], 1e-9):.2f}")


if __name__ == "__main__":
    main()
