"""Two small cuts of a recall's CPU, each against the code it replaced, interleaved in one process
over the CPU benchmark's questions (``bench cpu``'s, a node of your own with the 100k corpus):

1. the query encoder: cut the ids of one tokenization (``embedding.kept_pieces`` through
   ``OnnxQueryEmbedder.encode_kept``, now) against cutting the text (``QueryCut.cut``) and
   tokenizing it again (before); this process's CPU per query, and the vectors compared;
2. the query vector on the wire: each float32 in its shortest form (``pipeline.request_vector``,
   now) against the 17 digits of the double it widens to (before); the recall's own ``_msearch``
   replayed, the engine's CPU (its process, from /proc) and this process's per request, the
   answers compared.

    BRAIN_OPENSEARCH_URL=http://127.0.0.1:9241 BRAIN_DATA_DIR=../shared/data PYTHONPATH=.:lab \\
        .venv/bin/python lab/scripts/archive/wire_cuts.py --n 300 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import orjson
from brain_lab.bench.cpu import node_cpu_ms, node_pids, questions, until_idle
from brain_lab.commands.bench_common import _pool, _settings

from brain_search.encoders.factory import make_query_embedder
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval import pipeline
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client

Cost = dict[str, list[float]]
"""variant → [engine CPU ms, this process's CPU ms], summed"""


def _interleaved(calls: dict[str, Callable[[], Any]], cost: Cost, engine: Callable[[], float]) -> None:
    order = list(calls.items())
    random.shuffle(order)
    for name, call in order:
        until_idle()
        e0, c0 = engine(), time.process_time()
        call()
        e1 = engine()
        c1 = until_idle()
        cost[name][0] += e1 - e0
        cost[name][1] += (c1 - c0) * 1000.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300, help="distinct questions")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    settings = _settings("100k", "distinct")
    qs = questions(_pool(settings, "distinct"), args.n)
    client = make_client(settings)
    pids = node_pids(client)
    encoder = make_query_embedder(settings)

    def engine() -> float:
        return node_cpu_ms(pids)

    def no_engine() -> float:
        return 0.0

    # 1. the encoder's cut
    for _, text in qs[:50]:
        assert np.allclose(encoder.encode([text]), encoder.inner.encode([encoder.cut(text)]), atol=1e-6)
    enc_cost = {"cut the ids (now)": [0.0, 0.0], "cut the text, tokenize again (before)": [0.0, 0.0]}
    for _ in range(args.rounds):
        for _, text in qs:
            calls = {
                "cut the ids (now)": lambda t=text: encoder.encode([t]),
                "cut the text, tokenize again (before)": lambda t=text: encoder.inner.encode([encoder.cut(t)]),
            }
            _interleaved(calls, enc_cost, no_engine)
    n = args.rounds * len(qs)
    print(f"query encoder, {len(qs)} questions × {args.rounds}, CPU ms per query:")
    for name, (_, api) in enc_cost.items():
        print(f"  {name}: {api / n:.3f}")

    # 2. the vector on the wire
    retriever = Retriever(client, settings, QueryCache(encoder, 8192))
    alias = settings.memories_alias
    payloads = []
    for tenant, text in qs:
        plan = retriever.plan(tenant, RecallRequest(query=text, limit=10))
        now = retriever.plan_payload(tenant, plan)
        short = pipeline.request_vector
        pipeline.request_vector = lambda v: np.asarray(v).tolist()  # type: ignore[assignment]
        try:
            before = retriever.plan_payload(tenant, retriever._with_bodies(tenant, plan))
        finally:
            pipeline.request_vector = short
        payloads.append((now, before))

    def answers(resp: dict[str, Any]) -> list[Any]:
        hits = [r["hits"]["hits"] for r in resp["responses"]]
        return [[(h.get("_score"), orjson.dumps(h.get("fields"))) for h in leg] for leg in hits]

    for now, before in payloads[:50]:
        assert answers(client.msearch(body=now, index=alias)) == answers(client.msearch(body=before, index=alias))
    wire_cost = {"float32, shortest (now)": [0.0, 0.0], "the double's 17 digits (before)": [0.0, 0.0]}
    for _ in range(args.rounds):
        for now, before in payloads:
            calls = {
                "float32, shortest (now)": lambda b=now: client.msearch(body=b, index=alias),
                "the double's 17 digits (before)": lambda b=before: client.msearch(body=b, index=alias),
            }
            _interleaved(calls, wire_cost, engine)
    sizes = {
        "float32, shortest (now)": np.mean([len(a) for a, _ in payloads]),
        "the double's 17 digits (before)": np.mean([len(b) for _, b in payloads]),
    }
    print(f"the recall's _msearch, {len(payloads)} × {args.rounds}, per request (the same answers):")
    for name, (eng, api) in wire_cost.items():
        print(f"  {name}: {sizes[name] / 1000:.1f} KB, engine CPU {eng / n:.2f} ms, client CPU {api / n:.2f} ms")


if __name__ == "__main__":
    main()
