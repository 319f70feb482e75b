#!/usr/bin/env python
"""k-NN derived source's reader race, reproduced (not a test: it is a race, and it needs a large
index). Copies a memories index with ``_reindex`` into scratch indices made from the memories
template with derived source on (``--derived on``) or off, and after each copy asks the source
index for one document's full ``_source``, the way ``GET /v1/memories/{id}`` does.

    PYTHONPATH=. .venv/bin/python lab/scripts/derived_source_race.py \\
        --url http://127.0.0.1:9241 --index bt-perfrun-100k-memories-v1 --rounds 3

On k-NN 3.5.0.0 with the 100k load-test index (derived source on) the first copy failed after
100,000 of 100,162 documents with ``Already closed: MemorySegmentIndexInput(... .vec)``, and in
another run the second copy failed at once; from then on every full ``_source`` read of the index
answered 503 until the node was restarted (docs/operations.md, "Index design"). A copy out of an
index without derived source never failed.
"""

from __future__ import annotations

import argparse
import time

import httpx

from brain_search.config import load_settings
from brain_search.store.templates import memories_template


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="OpenSearch, e.g. http://127.0.0.1:9241")
    ap.add_argument("--index", required=True, help="the memories index to copy (left unchanged)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--derived", choices=("on", "off"), default="on", help="derived source of the copies")
    ap.add_argument("--dimension", type=int, default=384)
    a = ap.parse_args()

    http = httpx.Client(base_url=a.url, timeout=3600)
    body = memories_template(load_settings(index_prefix="race"), a.dimension)["template"]
    body["settings"]["index"]["knn.derived_source.enabled"] = a.derived == "on"
    scratch = "race-copy"
    failures = 0
    for n in range(1, a.rounds + 1):
        http.delete(f"/{scratch}")
        http.put(f"/{scratch}", json=body).raise_for_status()
        t = time.perf_counter()
        r = http.post(
            "/_reindex",
            params={"wait_for_completion": "true", "refresh": "true"},
            json={"source": {"index": a.index, "size": 1000}, "dest": {"index": scratch}},
        )
        copied = r.json().get("created") if r.status_code == 200 else None
        error = "" if r.status_code == 200 else f": {r.text[:300]}"
        probe = http.post(f"/{a.index}/_search", json={"size": 1, "query": {"match_all": {}}})
        failures += r.status_code != 200 or probe.status_code != 200
        print(
            f"round {n}: _reindex {r.status_code} ({copied} copied, {time.perf_counter() - t:.0f} s){error};"
            f" a full _source read of {a.index} afterwards: {probe.status_code}",
            flush=True,
        )
    http.delete(f"/{scratch}")
    print(f"{failures} of {a.rounds} rounds failed")


if __name__ == "__main__":
    main()
