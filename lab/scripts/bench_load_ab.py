"""Recall under load, two arms A/B: a fresh ``serve --workers N`` (``--workers``, 1 by default) per
run, the arms interleaved (order alternating per round), ``brain-search bench load`` (Poisson
arrivals, service phase only) against each. An arm is a set of environment assignments for the server: a setting
(``BRAIN_NODE_LIFT=0``) or another checkout's code (``PYTHONPATH=/path/to/checkout``). Prints every
run's p50/p95/p99, the median p95 per arm and the ratio B ÷ A, so the two arms share the machine's
state of the moment.

    BRAIN_OPENSEARCH_URL=http://127.0.0.1:9241 BRAIN_INDEX_PREFIX=bt-perfrun-100k BRAIN_ADMIN_KEY=... \\
      PYTHONPATH=. .venv/bin/python lab/scripts/bench_load_ab.py --a BRAIN_NODE_LIFT=0 --b BRAIN_NODE_LIFT=1.0

The corpus comes from ``brain-search bench corpus --size 100k`` on an isolated node
(``lab/reports/performance.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import urllib.request
from pathlib import Path

from brain_search.config import load_settings
from brain_search.local.node import LocalCluster
from brain_search.local.procs import BackgroundProcess

BIN = Path(sys.executable).parent


def engine_pid(port: int) -> int | None:
    """The pid of the local node serving ``port`` (``brain-search opensearch start``'s pid file)."""
    cluster = LocalCluster(load_settings(), http_port=port)
    return cluster.pid(cluster.nodes[0])


def assignments(arm: str) -> dict[str, str]:
    """``"A=1 B=x"`` → ``{"A": "1", "B": "x"}``."""
    out = {}
    for part in arm.split():
        name, sep, value = part.partition("=")
        if not sep or not name:
            raise SystemExit(f"an arm is NAME=VALUE assignments, got {part!r}")
        out[name] = value
    return out


def merge_segments(args: argparse.Namespace) -> None:
    """Force-merge the memories index to one segment: each run's writes add small segments, and
    their number moves the engine's CPU per recall more than most code changes do."""
    settings = load_settings()
    url = f"http://127.0.0.1:{args.engine_port}/{settings.memories_alias}/_forcemerge?max_num_segments=1"
    with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=600) as resp:
        resp.read()


def one_run(arm: str, out: Path, args: argparse.Namespace) -> dict:
    """A fresh API with the arm's environment, ``bench load`` against it, the API stopped."""
    if args.merge:
        merge_segments(args)
    env = {**os.environ, **assignments(arm)}
    url = f"http://127.0.0.1:{args.port}"
    server = BackgroundProcess(out.name, out.parent)  # its log: <out>.log beside the run's folder
    serve = [str(BIN / "brain-search"), "serve", "--port", str(args.port), "--workers", str(args.workers)]
    pid = server.start(serve, env)
    try:
        server.wait_http(f"{url}/healthz", timeout_s=120)
        cmd = [
            str(BIN / "brain-search"), "bench", "load", "--host", url, "--users", str(args.users),
            "--spawn-rate", str(args.users), "--duration", str(args.duration), "--rate", str(args.rate),
            "--no-engine", "--server-pid", str(pid), "--pool", args.pool, "--out", str(out),
        ]  # fmt: skip
        node = engine_pid(args.engine_port)
        if node:
            cmd += ["--engine-pid", str(node)]
        # exit 1: some requests failed; the run still counts (its table row shows how many)
        if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode not in (0, 1):
            raise SystemExit(f"bench load crashed: see {out}")
    finally:
        server.stop(timeout_s=30)
    phases = json.loads((out / "summary.json").read_text())["phases"]
    return next(p for p in phases if p["name"] != "engine")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="arm A, the baseline: NAME=VALUE assignments, space-separated")
    ap.add_argument("--b", required=True, help="arm B: NAME=VALUE assignments")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--users", type=int, default=32)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--port", type=int, default=8093)
    ap.add_argument("--workers", type=int, default=1, help="API processes (compose and Helm run 2)")
    ap.add_argument("--pool", default="recycled", help="the corpus's pool: recycled or distinct (bench corpus --pool)")
    ap.add_argument("--engine-port", type=int, default=9241)
    ap.add_argument("--out", type=Path, default=Path("out/bench/ab"))
    ap.add_argument("--merge", action="store_true", help="force-merge the memories to one segment before each run")
    ap.add_argument("--warm-up", type=float, default=0.0, help="seconds of unmeasured load (arm A) before round 1")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.warm_up > 0:  # the engine's JIT and caches: a node started just before costs the first runs CPU
        measured = args.duration
        args.duration = args.warm_up
        one_run(args.a, args.out / "warm-up", args)
        args.duration = measured
    p95: dict[str, list[float]] = {args.a: [], args.b: []}
    print(f"A = {args.a}, B = {args.b}; {args.rounds} rounds at {args.rate:g} req/s, {args.users} users")
    print("| round | arm | p50 | p95 | p99 | RPS | errors | CPU ms/req | load avg 1 min |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rnd in range(1, args.rounds + 1):
        order = [args.a, args.b] if rnd % 2 else [args.b, args.a]
        for value in order:
            arm = "A" if value == args.a else "B"
            r = one_run(value, args.out / f"r{rnd}-{arm}", args)
            p95[value].append(r["p95"])
            cpu = ", ".join(f"{k} {v:.1f}" for k, v in r["cpu_ms"].items())
            print(
                f"| {rnd} | {arm} | {r['p50']:.0f} | {r['p95']:.0f} | {r['p99']:.0f} | {r['rps']:.1f}"
                f" | {r['failures']} / {r['requests']} | {cpu} | {r['load_avg'][0]:.1f} |",
                flush=True,
            )
    ma, mb = statistics.median(p95[args.a]), statistics.median(p95[args.b])
    print(f"\nmedian p95: A ({args.a}) {ma:.1f} ms, B ({args.b}) {mb:.1f} ms; B ÷ A = {mb / ma:.2f}")


if __name__ == "__main__":
    main()
