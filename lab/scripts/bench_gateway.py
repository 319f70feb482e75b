"""What the engine gateway costs per engine call: the same requests straight to the node and
through the gateway (verified TLS, basic auth, the role rules), interleaved in one run.

Seeds a scratch index of N short documents under its own prefix, then sends R rounds of the
three calls a recall and an ingest make (a BM25 ``_search``, an ``_msearch`` of two searches,
a ``_bulk`` of 10 documents), alternating direct / gateway so drift hits both alike. Prints p50 /
p95 per call and path, and the ratio gateway / direct. Starts the local gateway when it is not
running (the node must be up: `brain-search opensearch start`).

    .venv/bin/python lab/scripts/bench_gateway.py --rounds 300
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from brain_lab.bench.stats import percentiles
from opensearchpy import OpenSearch

from brain_search.config import load_settings
from brain_search.gateway.rules import Role
from brain_search.local.gateway import LocalGateway
from brain_search.store.client import make_client

WORDS = "alpha beta gamma delta equity board offer salary trip dinner paris launch budget hiring".split()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", default="bench-gw")
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()

    base = load_settings(index_prefix=args.prefix)
    gw = LocalGateway(base, log=lambda m: None)
    started = not gw.running()
    gw.start()
    index = f"{args.prefix}-memories"
    direct = make_client(base.model_copy(update={"opensearch_url": f"http://127.0.0.1:{base.opensearch_http_port}"}))
    clients: dict[str, OpenSearch] = {"direct": direct, "gateway": make_client(gw.settings_for(Role.admin))}
    rng = random.Random(7)
    try:
        direct.indices.delete(index=index, ignore=[404])
        direct.indices.create(index=index, body={"settings": {"number_of_shards": 1, "number_of_replicas": 0}})
        lines: list[str] = []
        for i in range(args.docs):
            lines += [
                json.dumps({"index": {"_id": f"d{i}"}}),
                json.dumps({"content": " ".join(rng.choices(WORDS, k=12))}),
            ]
        direct.bulk(body="\n".join(lines) + "\n", index=index, refresh=True)

        def calls(c: OpenSearch, r: int) -> dict[str, float]:
            q = {"query": {"match": {"content": " ".join(rng.choices(WORDS, k=3))}}, "size": 10}
            t: dict[str, float] = {}
            t0 = time.perf_counter()
            c.search(index=index, body=q)
            t["_search"] = time.perf_counter() - t0
            body = "\n".join(json.dumps(x) for x in ({}, q, {}, q)) + "\n"
            t0 = time.perf_counter()
            c.msearch(body=body, index=index)
            t["_msearch"] = time.perf_counter() - t0
            docs: list[str] = []
            for k in range(10):
                docs += [json.dumps({"index": {"_id": f"w{r}-{k}"}}), json.dumps({"content": "written " * 5})]
            t0 = time.perf_counter()
            c.bulk(body="\n".join(docs) + "\n", index=index)
            t["_bulk"] = time.perf_counter() - t0
            return t

        for c in clients.values():  # warm the pools and the TLS session
            for r in range(20):
                calls(c, -r - 1)
        times: dict[str, dict[str, list[float]]] = {p: {} for p in clients}
        for r in range(args.rounds):
            for path in ("direct", "gateway") if r % 2 == 0 else ("gateway", "direct"):
                for call, dt in calls(clients[path], r * 2 + (path == "gateway")).items():
                    times[path].setdefault(call, []).append(dt * 1000)
        out: dict[str, Any] = {"rounds": args.rounds, "docs": args.docs, "calls": {}}
        for call in times["direct"]:
            d, g = percentiles(times["direct"][call], (50, 95)), percentiles(times["gateway"][call], (50, 95))
            out["calls"][call] = {
                "direct_p50_ms": round(d["p50"], 3),
                "direct_p95_ms": round(d["p95"], 3),
                "gateway_p50_ms": round(g["p50"], 3),
                "gateway_p95_ms": round(g["p95"], 3),
                "added_p50_ms": round(g["p50"] - d["p50"], 3),
                "ratio_p50": round(g["p50"] / d["p50"], 3),
            }
        print(json.dumps(out, indent=2))
    finally:
        direct.indices.delete(index=index, ignore=[404])
        if started:
            gw.stop()


if __name__ == "__main__":
    main()
