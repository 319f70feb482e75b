"""Recall under load, two arms A/B: a fresh ``serve --workers 1`` per run, the arms interleaved
(order alternating per round), ``brain-search bench load`` (Poisson arrivals, service phase only)
against each. An arm is a set of environment assignments for the server: a setting
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
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

BIN = Path(sys.executable).parent


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the API exited with {proc.returncode} before it was healthy")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the API at {url} was not healthy within {timeout_s:.0f} s")


def engine_pid(port: int) -> int | None:
    out = subprocess.run(["pgrep", "-f", f"brain-local-{port}/"], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else None


def assignments(arm: str) -> dict[str, str]:
    """``"A=1 B=x"`` → ``{"A": "1", "B": "x"}``."""
    out = {}
    for part in arm.split():
        name, sep, value = part.partition("=")
        if not sep or not name:
            raise SystemExit(f"an arm is NAME=VALUE assignments, got {part!r}")
        out[name] = value
    return out


def one_run(arm: str, out: Path, args: argparse.Namespace) -> dict:
    env = {**os.environ, **assignments(arm)}
    url = f"http://127.0.0.1:{args.port}"
    with open(out.with_suffix(".serve.log"), "wb") as log:
        return _run_against(env, url, log, out, args)


def _run_against(env: dict[str, str], url: str, log: IO[bytes], out: Path, args: argparse.Namespace) -> dict:
    server = subprocess.Popen(
        [str(BIN / "brain-search"), "serve", "--port", str(args.port), "--workers", "1"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_healthy(url, server)
        cmd = [
            str(BIN / "brain-search"), "bench", "load", "--host", url, "--users", str(args.users),
            "--spawn-rate", str(args.users), "--duration", str(args.duration), "--rate", str(args.rate),
            "--no-engine", "--server-pid", str(server.pid), "--out", str(out),
        ]  # fmt: skip
        pid = engine_pid(args.engine_port)
        if pid:
            cmd += ["--engine-pid", str(pid)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
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
    ap.add_argument("--engine-port", type=int, default=9241)
    ap.add_argument("--out", type=Path, default=Path("out/bench/ab"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
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
