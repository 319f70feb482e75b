"""Headless Locust runs against a running stack, and the bare engine at the same concurrency.

One ``bench load`` run: prepare (tenants' keys through the admin API, the workload file with each
recall's own ``_msearch`` body), then per phase a warm-up and a measured Locust run in a
subprocess (Locust monkey-patches with gevent, so it never runs inside this process): first the
bare engine (``EngineUser`` → OpenSearch ``_msearch``), then the service (``RecallUser`` → the
API). Results: Locust's CSV/HTML per phase, ``summary.json``/``summary.md`` and a latency-over-time
PNG in the output folder. All latencies in ms.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from brain_search_client import AdminClient, BrainClient

from brain_lab.bench.corpus import Pool, cached_embedder, corpus_count, load_pool, loaded_part
from brain_lab.bench.stats import percentiles
from brain_lab.bench.workload import Workload, build_workload, parse_mix
from brain_lab.paths import LOADTESTS
from brain_search.config import Settings
from brain_search.graph.store import GraphStore
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client

LOCUSTFILE = LOADTESTS / "locustfile.py"
SERVICE, ENGINE = "service", "engine"


@dataclass
class PhaseResult:
    """One measured Locust run, from its per-request samples (ms, exact; RPS over their span)."""

    name: str
    users: int
    target_rps: float | None
    duration_s: float
    requests: int
    failures: int
    rps: float
    p50: float
    p95: float
    p99: float
    mean: float
    load_avg: tuple[float, float, float]
    by_name: dict[str, dict[str, float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    cpu_ms: dict[str, float] = field(default_factory=dict)
    """process label → CPU ms per answered request (warm-up included, so approximate)."""
    engine_requests: dict[str, int] = field(default_factory=dict)
    """how many answered recalls made each number of engine requests (``timings.engine_requests``),
    e.g. ``{"1": 255, "2": 1629}``"""

    @property
    def engine_requests_per_recall(self) -> float | None:
        """The mean over the answered recalls (None: the phase sent no recall to the API)."""
        n = sum(self.engine_requests.values())
        return sum(int(k) * v for k, v in self.engine_requests.items()) / n if n else None


def read_failures(prefix: Path, limit: int = 5) -> list[str]:
    path = Path(f"{prefix}_failures.csv")
    if not path.is_file():
        return []
    with path.open() as fh:
        return [f"{r['Name']}: {r['Error'][:200]} (x{r['Occurrences']})" for r in csv.DictReader(fh)][:limit]


def read_samples(prefix: Path) -> list[tuple[float, str, float, bool]]:
    """``<prefix>_samples.csv`` (written by the Locust file): (end time s, name, ms, ok)."""
    path = Path(f"{prefix}_samples.csv")
    if not path.is_file():
        return []
    with path.open() as fh:
        return [(float(r["t"]), r["name"], float(r["ms"]), r["ok"] == "1") for r in csv.DictReader(fh)]


def summarize(samples: Sequence[tuple[float, str, float, bool]]) -> dict[str, float]:
    """Exact figures of a set of samples: requests, failures, RPS over their span, p50/p95/p99, mean."""
    if not samples:
        return {"requests": 0, "failures": 0, "rps": 0.0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0}
    ms = [x[2] for x in samples]
    times = [x[0] for x in samples]
    span = max(times) - min(times)
    p = percentiles(ms)
    return {
        "requests": len(samples),
        "failures": sum(1 for x in samples if not x[3]),
        "rps": len(samples) / span if span > 0 else float(len(samples)),
        **p,
        "mean": float(np.mean(ms)),
    }


def per_second(samples: Sequence[tuple[float, str, float, bool]]) -> list[dict[str, float]]:
    """Per-second buckets from the first sample: t, requests, p50, p95 (ms)."""
    if not samples:
        return []
    t0 = min(x[0] for x in samples)
    buckets: dict[int, list[float]] = {}
    for t, _, ms, _ok in samples:
        buckets.setdefault(int(t - t0), []).append(ms)
    out = []
    for sec in sorted(buckets):
        p = percentiles(buckets[sec], (50, 95))
        out.append({"t": float(sec), "rps": float(len(buckets[sec])), "p50": p["p50"], "p95": p["p95"]})
    return out


def run_locust(
    user_class: str,
    host: str,
    workload_file: Path,
    users: int,
    spawn_rate: float,
    duration_s: float,
    prefix: Path | None,
    target_rps: float | None = None,
    extra_env: dict[str, str] | None = None,
) -> float:
    """One headless Locust run in a subprocess; CSV/HTML under ``prefix`` (None: a warm-up).
    Returns the CPU seconds Locust used."""
    env = {**os.environ, "BRAIN_LOAD_WORKLOAD": str(workload_file), **(extra_env or {})}
    env["BRAIN_LOAD_RATE"] = f"{target_rps / users:.6f}" if target_rps else "0"
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        user_class,
        "--headless",
        "--users",
        str(users),
        "--spawn-rate",
        str(spawn_rate),
        "--run-time",
        f"{max(1, round(duration_s))}s",
        "--host",
        host,
        "--stop-timeout",
        "5",
        "--only-summary",
        "--loglevel",
        "WARNING",
    ]
    if prefix is not None:
        cmd += ["--csv", str(prefix), "--csv-full-history", "--html", f"{prefix}.html"]
        env["BRAIN_LOAD_SAMPLES"] = f"{prefix}_samples.csv"
        env["BRAIN_LOAD_ENGINE_REQUESTS"] = f"{prefix}_engine_requests.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # exit 1 only says "some requests failed": the CSV tells how many; anything else is a crash
    if proc.returncode not in (0, 1) or (prefix is not None and not Path(f"{prefix}_stats.csv").is_file()):
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise RuntimeError(f"locust {user_class} failed (exit {proc.returncode}):\n{tail}")
    # the load generator's own CPU: it shares the cores with what it measures
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def measure(
    name: str,
    user_class: str,
    host: str,
    workload_file: Path,
    out: Path,
    users: int,
    spawn_rate: float,
    duration_s: float,
    warmup_s: float,
    target_rps: float | None = None,
    extra_env: dict[str, str] | None = None,
    tag: str = "",
    cpu_pids: dict[str, int] | None = None,
) -> PhaseResult:
    """A warm-up and a measured run; ``cpu_pids`` (label → pid) get their CPU per request."""
    cpu0 = {label: process_tree_cpu_s(pid) for label, pid in (cpu_pids or {}).items()}
    if warmup_s > 0:
        run_locust(user_class, host, workload_file, users, spawn_rate, warmup_s, None, target_rps, extra_env)
    prefix = out / f"{name}{tag}"
    locust_cpu_s = run_locust(
        user_class, host, workload_file, users, spawn_rate, duration_s, prefix, target_rps, extra_env
    )
    samples = read_samples(prefix)
    agg = summarize(samples)
    names = sorted({x[1] for x in samples})
    answered = max(agg["requests"] * (1 + warmup_s / duration_s), 1)
    cpu = {label: (process_tree_cpu_s(pid) - cpu0[label]) * 1000 / answered for label, pid in (cpu_pids or {}).items()}
    cpu["locust"] = locust_cpu_s * 1000 / max(agg["requests"], 1)  # the measured run only
    return PhaseResult(
        name=name,
        users=users,
        target_rps=target_rps,
        duration_s=duration_s,
        requests=int(agg["requests"]),
        failures=int(agg["failures"]),
        rps=agg["rps"],
        p50=agg["p50"],
        p95=agg["p95"],
        p99=agg["p99"],
        mean=agg["mean"],
        load_avg=os.getloadavg(),
        by_name={n: summarize([x for x in samples if x[1] == n]) for n in names},
        errors=read_failures(prefix),
        cpu_ms=cpu,
        engine_requests=read_engine_requests(prefix),
    )


def read_engine_requests(prefix: Path) -> dict[str, int]:
    """``<prefix>_engine_requests.json`` (written by the Locust file for the API's recalls)."""
    path = Path(f"{prefix}_engine_requests.json")
    return {str(k): int(v) for k, v in json.loads(path.read_text()).items()} if path.is_file() else {}


def process_tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its live children (uvicorn's workers), from
    /proc: on a shared machine, CPU per request is the figure other people's load cannot skew."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the command, from state = index 0: ppid 1, utime 11, stime 12, cutime 13, cstime 14
        if int(entry.name) == pid:  # itself plus its children that have exited
            total += sum(int(x) for x in fields[11:15]) / tick
        elif int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


# ------------------------------------------------------------------------------- preparation
def admin_keys(host: str, admin_key: str, tenants: Sequence[str]) -> dict[str, str]:
    """A fresh API key per tenant through the admin API (the tenant is created if missing)."""
    with AdminClient(host, admin_key=admin_key, timeout=30.0) as admin:
        keys = {}
        for tenant in tenants:
            admin.tenants.ensure(tenant)
            keys[tenant] = admin.keys.create(tenant, label="bench").key
    return keys


def service_routes(host: str) -> set[str]:
    with BrainClient(host, timeout=30.0) as brain:
        return set(brain.openapi().get("paths", {}))


class CachedVectors:
    """Query vectors from the disk cache (the runner must not load the model per query)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        return self.vectors[text]


def engine_payloads(settings: Settings, workload: Workload, log: Callable[[str], None] = print) -> list[str | None]:
    """Each recall's own ``_msearch`` NDJSON (``Retriever.plan``), None for writes."""
    texts = sorted({it.body["query"] for it in workload.recalls()})
    log(f"query vectors for {len(texts)} distinct queries (disk cache; misses are encoded once)")
    vecs = cached_embedder(settings).encode(texts)
    client = make_client(settings)
    retriever = Retriever(
        client, settings, CachedVectors(dict(zip(texts, vecs, strict=True))), GraphStore(client, settings)
    )
    out: list[str | None] = []
    for it in workload.items:
        if it.kind == "write":
            out.append(None)
            continue
        plan = retriever.plan(it.tenant, RecallRequest(**it.body))
        out.append(retriever.plan_payload(plan))
    client.close()
    return out


def write_workload(
    path: Path, workload: Workload, keys: dict[str, str], payloads: Sequence[str | None] | None, index: str
) -> None:
    items = []
    for i, it in enumerate(workload.items):
        row: dict[str, Any] = {"tenant": it.tenant, "kind": it.kind, "tier": it.tier, "body": it.body}
        if payloads is not None and payloads[i] is not None:
            row["msearch"] = payloads[i]
            row["msearch_index"] = index
        items.append(row)
    path.write_text(json.dumps({"items": items, "keys": keys, "mix": workload.mix}))


def prepare(
    settings: Settings,
    host: str,
    out: Path,
    *,
    n_requests: int,
    mix: str,
    engine: bool,
    pool: Pool | None = None,
    log: Callable[[str], None] = print,
) -> tuple[Path, Workload]:
    """Keys, workload and engine bodies for the corpus behind ``settings``; returns the workload file."""
    if settings.admin_key is None:
        raise RuntimeError("BRAIN_ADMIN_KEY is needed to create the tenants' API keys")
    routes = service_routes(host)
    with_writes = "/v1/memories" in routes
    if not with_writes:
        log("the service has no POST /v1/memories (ingestion not merged yet): the mix runs without writes")
    pool = pool or load_pool(settings, cached_embedder(settings))
    # the corpus may hold only the pool's first memories (`bench corpus --size 20k`): draw from those
    client = make_client(settings)
    try:
        pool = loaded_part(pool, corpus_count(client, settings))
    finally:
        client.close()
    workload = build_workload(pool, n_requests, parse_mix(mix), with_writes=with_writes)
    keys = admin_keys(host, settings.admin_key.get_secret_value(), sorted({it.tenant for it in workload.items}))
    payloads = engine_payloads(settings, workload, log) if engine else None
    out.mkdir(parents=True, exist_ok=True)
    path = out / "workload.json"
    write_workload(path, workload, keys, payloads, settings.memories_alias)
    return path, workload


# ------------------------------------------------------------------------------- reporting
def knee(results: Sequence[PhaseResult], p95_limit_ms: float) -> PhaseResult | None:
    """The step with the highest achieved RPS whose p95 is within the limit and had no errors."""
    ok = [r for r in results if r.p95 <= p95_limit_ms and r.failures == 0]
    return max(ok, key=lambda r: r.rps) if ok else None


def ratio(service: PhaseResult, engine: PhaseResult | None) -> float | None:
    if engine is None or engine.p95 <= 0:
        return None
    return service.p95 / engine.p95


def plot_over_time(series: dict[str, Path], png: Path, title: str) -> None:
    """p50/p95 over time (left) and RPS (right) for each phase's history CSV."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax2 = ax.twinx()
    colors = {SERVICE: "tab:blue", ENGINE: "tab:orange"}
    for label, prefix in series.items():
        rows = per_second(read_samples(prefix))
        if not rows:
            continue
        t = [r["t"] for r in rows]
        color = colors.get(label)
        ax.plot(t, [r["p95"] for r in rows], color=color, label=f"{label} p95")
        ax.plot(t, [r["p50"] for r in rows], color=color, linestyle="--", label=f"{label} p50")
        ax2.plot(t, [r["rps"] for r in rows], color=color, linestyle=":", alpha=0.6, label=f"{label} RPS")
    ax.set_xlabel("time (s, per-second buckets)")
    ax.set_ylabel("latency (ms)")
    ax2.set_ylabel("requests/s")
    ax.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper left", fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def plot_knee(results: Sequence[PhaseResult], png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    rs = sorted(results, key=lambda r: r.rps)
    ax.plot([r.rps for r in rs], [r.p95 for r in rs], "o-", label="p95")
    ax.plot([r.rps for r in rs], [r.p50 for r in rs], "s--", label="p50")
    ax.plot([r.rps for r in rs], [r.p99 for r in rs], "^:", label="p99")
    for limit in (50, 200):
        ax.axhline(limit, color="grey", linewidth=0.8)
        ax.annotate(f"{limit} ms", (0, limit), textcoords="offset points", xytext=(2, 2), fontsize=8)
    ax.set_xlabel("achieved requests/s")
    ax.set_ylabel("latency (ms)")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def cpu_text(r: PhaseResult) -> str:
    text = ", ".join(f"{k} {v:.1f}" for k, v in r.cpu_ms.items()) or "-"
    per_recall = r.engine_requests_per_recall
    return text if per_recall is None else f"{text}; engine requests per recall {per_recall:.2f}"


def summary_markdown(results: Sequence[PhaseResult], extra: dict[str, Any]) -> str:
    lines = [
        "| phase | users | target RPS | RPS | requests | errors | p50 ms | p95 ms | p99 ms | CPU ms/req"
        " | load avg (1/5/15) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        target = f"{r.target_rps:g}" if r.target_rps else "open"
        la = "/".join(f"{x:.1f}" for x in r.load_avg)
        lines.append(
            f"| {r.name} | {r.users} | {target} | {r.rps:.1f} | {r.requests} | {r.failures} | {r.p50:.0f} |"
            f" {r.p95:.0f} | {r.p99:.0f} | {cpu_text(r)} | {la} |"
        )
    for k, v in extra.items():
        lines.append(f"\n**{k}**: {v}")
    return "\n".join(lines) + "\n"


def save_summary(out: Path, results: Sequence[PhaseResult], extra: dict[str, Any]) -> None:
    (out / "summary.json").write_text(
        json.dumps({"phases": [asdict(r) for r in results], **extra, "saved_at": time.time()}, indent=2)
    )
    (out / "summary.md").write_text(summary_markdown(results, extra))
