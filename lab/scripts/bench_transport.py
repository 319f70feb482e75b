"""The client's CPU per engine round trip: opensearch-py's urllib3 connection beside the
service's own (``brain_search/store/http.py``), on a recall's own ``_msearch``, in one run.

The sample memories go in as one tenant under the index prefix ``bt-transport``; the payload is the
recall's (``Retriever.plan`` + ``plan_payload``) for each of the api bench's questions. Rounds
alternate the two clients, ``--n`` requests each, after a warm-up; the figure is this process's
CPU per request (``time.process_time``), so the engine's time is out.

    PYTHONPATH=. .venv/bin/python lab/scripts/bench_transport.py --n 1000 --rounds 4
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

from brain_lab.bench.api_cost import QUESTIONS, TENANT, index_tenant
from opensearchpy import OpenSearch, Urllib3HttpConnection

from brain_search.api.app import build_state
from brain_search.config import Settings
from brain_search.models import RecallRequest
from brain_search.store.client import OrjsonSerializer
from brain_search.store.indices import install_all
from brain_search.store.templates import delete_indices


def cpu_per_call(fn: Callable[[], Any], n: int) -> float:
    for _ in range(max(n // 20, 10)):
        fn()
    c0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - c0) * 1000.0 / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    s = Settings().model_copy(update={"index_prefix": "bt-transport"})
    state = build_state(s)
    try:
        delete_indices(state.client, s)
        install_all(state.client, s, s.embedding_dimension)
        index_tenant(state.client, s)
        r = state.retriever
        payloads = [r.plan_payload(r.plan(TENANT, RecallRequest(query=q, limit=10))) for q in QUESTIONS]
        index = r.placement.index(TENANT)
        stock = OpenSearch(
            hosts=[s.opensearch_url],
            serializer=OrjsonSerializer(),
            pool_maxsize=s.opensearch_pool_size,
            connection_class=Urllib3HttpConnection,
        )
        print(f"payload {sum(map(len, payloads)) // len(payloads)} bytes on average, {len(payloads)} questions")

        def cycle(client: OpenSearch) -> Callable[[], Any]:
            i = itertools.count()
            return lambda: client.msearch(body=payloads[next(i) % len(payloads)], index=index)

        old, new = [], []
        for k in range(args.rounds):
            old.append(cpu_per_call(cycle(stock), args.n))
            new.append(cpu_per_call(cycle(state.client), args.n))
            print(f"round {k + 1}: urllib3 {old[-1]:.3f} ms, EngineConnection {new[-1]:.3f} ms")
        stock.close()
        a, b = statistics.median(old), statistics.median(new)
        print(f"median client CPU per _msearch: urllib3 {a:.3f} ms, EngineConnection {b:.3f} ms = {b / a:.2f}x")
    finally:
        delete_indices(state.client, s)
        state.close()


if __name__ == "__main__":
    main()
