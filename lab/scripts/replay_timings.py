"""A load workload's recalls sent one at a time to a running API, with the stage timings each
response carries (``timings``): where a single recall's latency goes with no load at all.

    PYTHONPATH=. .venv/bin/python lab/scripts/replay_timings.py out/bench/<knee run>/workload.json \
        --host http://127.0.0.1:8091 --n 400

Run it twice against the same API process: the first pass meets new questions and words, the
second has their vectors cached and their words counted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.request
from collections import defaultdict
from pathlib import Path


def quantile(xs: list[float], p: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("workload", type=Path)
    ap.add_argument("--host", default="http://127.0.0.1:8091")
    ap.add_argument("--n", type=int, default=400)
    args = ap.parse_args()
    workload = json.loads(args.workload.read_text())
    items = [it for it in workload["items"] if it["kind"] != "write"][: args.n]
    stages: dict[str, list[float]] = defaultdict(list)
    walls: list[float] = []
    for it in items:
        req = urllib.request.Request(
            f"{args.host}/v1/recall",
            data=json.dumps(it["body"]).encode(),
            headers={"Authorization": f"Bearer {workload['keys'][it['tenant']]}", "content-type": "application/json"},
        )
        t0 = time.perf_counter()
        with urllib.request.urlopen(req) as resp:
            body = json.loads(resp.read())
        walls.append((time.perf_counter() - t0) * 1000.0)
        for name, value in body["timings"].items():
            if isinstance(value, int | float):
                stages[name].append(float(value))
    print(f"{len(walls)} recalls, client wall: p50 {quantile(walls, 0.5):.1f} p95 {quantile(walls, 0.95):.1f} ms")
    for name, xs in stages.items():
        print(
            f"{name:>16}: p50 {quantile(xs, 0.5):7.2f}  p95 {quantile(xs, 0.95):7.2f}  mean {statistics.mean(xs):7.2f}"
        )


if __name__ == "__main__":
    main()
