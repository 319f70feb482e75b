#!/usr/bin/env python
"""Ingestion benchmark (not a test): N memories end to end — HTTP API → Redis → Celery worker →
OpenSearch, searchable at the end — next to the bare embedder throughput on the same texts,
measured in the same run (before and after, as the machine may be shared). Goal: end to end
≥ 90% of bare embedding.

    .venv/bin/python lab/scripts/bench_ingest.py            # 10,000 LoCoMo turns, 1 worker process
    .venv/bin/python lab/scripts/bench_ingest.py --pin 1    # the engine on a CPU of its own, as deployed

It starts its own Redis (--redis-port), API (--api-port), worker and, unless --opensearch-url is
given, its own single OpenSearch node (--node-port), and stops what it started. Before the measured
run, --warm-up memories (3,000) of another tenant go through the whole pipeline: a node started
seconds before spends about half its CPU compiling for minutes (lab/reports/history/lab-2026-12.md,
"Ingest throughput").

On a shared machine wall-clock figures move with the neighbours' load, so it also reports the CPU
seconds each part spent per 1,000 memories (bare embedding vs worker + API + Redis + OpenSearch,
the node's share being clean only on its own node): their ratio is the throughput ratio a
dedicated, CPU-bound machine would see.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from brain_search.config import Settings, load_settings
from brain_search.ingest.sources import read_locomo


def texts_for(n: int, data_dir: Path) -> list[str]:
    """n distinct texts: LoCoMo turns, cycled with a marker once they run out."""
    base = [r.memory.content for r in read_locomo(data_dir / "locomo" / "locomo10.json") if r.memory]
    return [base[i % len(base)] + ("" if i < len(base) else f" (again, {i // len(base)})") for i in range(n)]


def bare_embedding(settings: Settings, texts: list[str], call_size: int) -> tuple[float, float, list[Any]]:
    """The embedder alone, in calls of ``call_size`` texts (as the pipeline makes them):
    (memories/s, CPU seconds of this process, the vectors)."""
    from brain_search.encoders.factory import make_worker_embedder

    embedder = make_worker_embedder(settings)
    embedder.encode(texts[:64])  # warm-up
    vectors: list[Any] = []
    t, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), call_size):
        vectors.extend(embedder.encode(texts[i : i + call_size]))
    return len(texts) / (time.perf_counter() - t), time.process_time() - cpu, vectors


def jvm_threads(pid: int | None) -> dict[str, float]:
    """CPU seconds of a JVM's threads by kind (C2 / C1 compilers, GC, the rest), read from
    ``/proc/<pid>/task/*`` (Linux; empty elsewhere or when unknown)."""
    out = {"C2": 0.0, "C1": 0.0, "GC": 0.0, "rest": 0.0}
    if pid is None:
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return {}
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        seconds = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        kind = (
            "C2" if name.startswith("C2 Compiler")
            else "C1" if name.startswith("C1 Compiler")
            else "GC" if name.startswith(("GC Thread", "G1 "))
            else "rest"
        )  # fmt: skip
        out[kind] += seconds
    return out


def jvm_delta(after: dict[str, float], before: dict[str, float], total: float | None = None) -> str:
    """The CPU seconds by thread kind between two readings; with the process's own ``total`` also
    what threads that ended in between used (Lucene starts a thread per merge)."""
    parts = {k: after[k] - before.get(k, 0.0) for k in after}
    if parts and total is not None:
        parts["ended threads (merges)"] = total - sum(parts.values())
    return ", ".join(f"{k} {v:.1f}" for k, v in parts.items()) or "unknown"


def jit_seconds(after: dict[str, float], before: dict[str, float]) -> float:
    """CPU seconds the C1 and C2 compiler threads used between two ``jvm_threads`` readings."""
    return after["C2"] + after["C1"] - before["C2"] - before["C1"]


def settle_engine(
    client: Any, settings: Settings, pid: int | None, texts: list[str], vectors: list[Any], cap_s: float
) -> None:
    """Bulk-write the bare run's vectors as a third tenant's memories (the pipeline's own request
    builders, 500 per request, external versions; past three times the measured run's count the
    same ids are written again, so the index stays that size) until the node's JIT compilers have
    settled: a 10-s window in which C2 and C1 together used under 0.5 CPU s, at most ``cap_s``.
    Then force-merge (the rewrites leave deleted documents that would otherwise be merged away
    during the measured run) and wait for the compile queue (a quiet 5-s window). A node that
    serves for days is past all this; the benchmark's node was started minutes before."""
    from brain_search.ingest.bulk import bulk_body, encode_entry, index_action
    from brain_search.store.documents import build_memory_doc, memory_doc_id

    first = jvm_threads(pid)
    if pid is None or not first:
        print("engine settle: skipped (no per-thread CPU for the node)")
        return
    t0, cpu0, n = time.monotonic(), cpu_seconds(pid), 0
    window_t, window = t0, first
    ids = 3 * len(texts)
    while time.monotonic() - t0 < cap_s:
        entries = []
        for _ in range(settings.bulk_max_docs):
            i, memory_id = n % len(texts), f"s{n % ids}"
            doc = build_memory_doc(
                tenant_id="bench-settle", memory_id=memory_id, content=texts[i], embedding=(), embedding_model="bench"
            )
            doc["embedding"] = vectors[i]
            action = index_action(memory_doc_id("bench-settle", memory_id), "bench-settle", time.time_ns() // 1000)
            entries.append(encode_entry(memory_id, action, doc))
            n += 1
        response = client.bulk(body=bulk_body(entries), index=settings.memories_alias)
        if response.get("errors"):
            raise SystemExit("engine settle: a bulk request failed")
        if time.monotonic() - window_t >= 10:
            now = jvm_threads(pid)
            jit = jit_seconds(now, window)
            print(f"  engine settle: {n} documents, {time.monotonic() - t0:.0f}s, JIT {jit:.1f} CPU s in the last 10 s")
            if jit < 0.5:
                break
            window_t, window = time.monotonic(), now
    client.indices.refresh(index=settings.memories_alias)
    # the rewrites leave segments full of deleted documents: merged now, not during the measured run
    client.indices.forcemerge(index=settings.memories_alias, params={"max_num_segments": "1"}, request_timeout=1800)
    while client.indices.stats(index=settings.memories_alias, metric="merge")["_all"]["total"]["merges"]["current"]:
        time.sleep(1)
    for _ in range(12):  # the compile queue drains once the load stops
        before = jvm_threads(pid)
        time.sleep(5)
        if jit_seconds(jvm_threads(pid), before) < 0.2:
            break
    print(
        f"engine settle: {n} documents of a third tenant in {time.monotonic() - t0:.0f}s (merges done);"
        f" node CPU s by thread kind: {jvm_delta(jvm_threads(pid), first, cpu_seconds(pid) - cpu0)}"
    )


ENGINE_STATS = (
    ("indexing", "index_total"), ("indexing", "index_time_in_millis"), ("refresh", "total"),
    ("refresh", "total_time_in_millis"), ("merges", "total_docs"), ("merges", "total_time_in_millis"),
    ("search", "query_total"), ("search", "query_time_in_millis"), ("get", "total"), ("get", "time_in_millis"),
)  # fmt: skip


def engine_counters(client: Any) -> dict[str, dict[str, int]]:
    """Per index (and per thread pool, as ``pool:<name>``) counters of the node: what its CPU did."""
    out: dict[str, dict[str, int]] = {}
    for name, body in client.indices.stats(params={"expand_wildcards": "all"})["indices"].items():
        total = body["total"]
        out[name] = {f"{a}.{b}": int(total.get(a, {}).get(b, 0)) for a, b in ENGINE_STATS}
    for node in client.nodes.stats(metric="thread_pool")["nodes"].values():
        for pool, body in node["thread_pool"].items():
            out[f"pool:{pool}"] = {"completed": int(body.get("completed", 0))}
    return out


def counters_delta(after: dict[str, dict[str, int]], before: dict[str, dict[str, int]]) -> list[str]:
    """One line per index or pool whose counters moved: ``name: key +n, ...``."""
    lines = []
    for name, now in sorted(after.items()):
        moved = {k: v - before.get(name, {}).get(k, 0) for k, v in now.items()}
        if any(moved.values()):
            lines.append(f"{name}: " + ", ".join(f"{k} +{v}" for k, v in moved.items() if v))
    return lines


@contextmanager
def on_cpus(cpus: set[int]) -> Iterator[None]:
    """Run the block, and start processes from it, on ``cpus`` only (children inherit it)."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of a process and its children (0 when unknown)."""
    try:
        import psutil
    except ImportError:
        return float("nan")
    if pid is None:
        return 0.0
    total = 0.0
    try:
        root = psutil.Process(pid)
        for p in [root, *root.children(recursive=True)]:
            t = p.cpu_times()
            total += t.user + t.system
    except psutil.Error:
        pass
    return total


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "brain_search.commands.cli", *args],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def new_tenant(http: httpx.Client, admin: dict[str, str], tenant_id: str) -> dict[str, str]:
    """A tenant and a key of its own: the headers its requests carry."""
    http.post("/v1/admin/tenants", json={"tenant_id": tenant_id}, headers=admin).raise_for_status()
    key = http.post(f"/v1/admin/tenants/{tenant_id}/keys", json={}, headers=admin).json()["key"]
    return {"Authorization": f"Bearer {key}"}


def wait_done(http: httpx.Client, headers: dict[str, str], task_ids: list[str], timeout_s: float) -> list[dict]:
    """Every task's final status. One GET at a time, for the oldest task not yet done (each
    is read again only once it is done, when the next is asked for): polling all ten tasks
    five times a second cost the API and OpenSearch about 1 CPU s per 1,000 memories each."""
    deadline = time.monotonic() + timeout_s
    done: list[dict] = []
    for t in task_ids:
        while True:
            body = http.get(f"/v1/tasks/{t}", headers=headers).json()
            if body["state"] in ("succeeded", "failed"):
                done.append(body)
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"tasks not done after {timeout_s}s")
            time.sleep(0.2)
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=1000, help="memories per POST /v1/memories")
    ap.add_argument("--concurrency", type=int, default=1, help="worker processes")
    ap.add_argument(
        "--pin",
        type=int,
        default=0,
        metavar="N",
        help="the deployment's shape: the worker and both bare runs on the first N CPUs, OpenSearch, the API"
        " and Redis on the others (0: everything shares every CPU)",
    )
    ap.add_argument("--prefix", default="bench-ingest")
    ap.add_argument("--redis-port", type=int, default=6382)
    ap.add_argument("--api-port", type=int, default=8097)
    ap.add_argument("--opensearch-url", default=None, help="use this OpenSearch instead of an own node")
    ap.add_argument("--node-port", type=int, default=9271, help="HTTP port of the own node (transport +100)")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: BRAIN_DATA_DIR or ../shared/data")
    ap.add_argument("--keep", action="store_true", help="keep the benchmark's indices")
    ap.add_argument(
        "--warm-up",
        type=int,
        default=3000,
        help="memories of another tenant ingested before the measured run (0: none). A node started"
        " seconds before spends about half its indexing CPU compiling (JIT) for the first minutes",
    )
    ap.add_argument(
        "--settle-s",
        type=float,
        default=300,
        help="after the warm-up, bulk-write a third tenant's memories with the bare run's vectors until"
        " the node's JIT compilers have settled, at most this long (0: skip; own node only)",
    )
    a = ap.parse_args()

    from brain_search.local.node import LocalCluster
    from brain_search.local.redis_server import LocalRedis
    from brain_search.store.client import make_client
    from brain_search.store.templates import delete_indices, install_memories_index

    data_dir = a.data_dir or Path(os.environ.get("BRAIN_DATA_DIR") or ROOT.parent / "shared" / "data")
    admin_key = secrets.token_urlsafe(24)
    settings = load_settings(
        index_prefix=a.prefix,
        redis_port=a.redis_port,
        redis_url=f"redis://127.0.0.1:{a.redis_port}/0",
    )
    every = texts_for(a.n + a.warm_up, data_dir)
    texts, warm_texts = every[: a.n], every[a.n :]
    print(
        f"{a.n} texts, mean {sum(map(len, texts)) / len(texts):.0f} characters; CPUs: {os.cpu_count()};"
        f" warm-up: {a.warm_up}"
    )

    everywhere = sorted(os.sched_getaffinity(0))
    embed_cpus, engine_cpus = set(everywhere), set(everywhere)
    if a.pin:
        if a.pin >= len(everywhere):
            raise SystemExit(f"--pin {a.pin} leaves no CPU for the engine ({len(everywhere)} usable)")
        embed_cpus, engine_cpus = set(everywhere[: a.pin]), set(everywhere[a.pin :])
        print(f"pinned: worker and bare embedding on CPUs {sorted(embed_cpus)}, the rest on {sorted(engine_cpus)}")
    os.sched_setaffinity(0, engine_cpus)  # what this process starts from here on inherits it

    node = None
    if a.opensearch_url:
        settings = settings.model_copy(update={"opensearch_url": a.opensearch_url})
    else:
        node = LocalCluster(
            settings, nodes=1, http_port=a.node_port, transport_port=a.node_port + 100,
            cluster_name=f"{a.prefix}-node", log=print,
        )  # fmt: skip
        node.start()
        settings = settings.model_copy(update={"opensearch_url": node.url})

    try:
        with on_cpus(embed_cpus):
            bare_before, bare_cpu_before, vectors = bare_embedding(settings, texts, settings.bulk_max_docs)
        print(f"bare embedder (before): {bare_before:.1f} memories/s, {bare_cpu_before:.1f} CPU s")

        redis = LocalRedis(settings, port=a.redis_port, log=print)
        redis_started = not redis.running()
        redis.start()
        client = make_client(settings)
        delete_indices(client, settings)
        install_memories_index(client, settings, settings.embedding_dimension)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
        env.update(
            HF_HUB_OFFLINE="1",
            BRAIN_INDEX_PREFIX=a.prefix,
            BRAIN_REDIS_URL=str(settings.redis_url),
            BRAIN_OPENSEARCH_URL=settings.opensearch_url,
            BRAIN_ADMIN_KEY=admin_key,
            BRAIN_CACHE_DIR=str(settings.cache_dir),
        )
        logs = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
        with on_cpus(embed_cpus):
            worker = spawn(["worker", f"--concurrency={a.concurrency}", "--loglevel=warning"], env, logs / "worker.log")
        api = spawn(["serve", f"--port={a.api_port}"], env, logs / "api.log")
        http = httpx.Client(base_url=f"http://127.0.0.1:{a.api_port}", timeout=120)
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    if http.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or api.poll() is not None:
                    raise SystemExit(f"the API did not start; see {logs / 'api.log'}")
                time.sleep(0.5)
            admin = {"Authorization": f"Bearer {admin_key}"}
            headers = new_tenant(http, admin, "bench")
            node_pid = node.pid(node.nodes[0]) if node else None
            # warm-up: the worker has loaded its model once this task is done
            r = http.post("/v1/memories", json={"content": "warm-up", "memory_id": "warm-up"}, headers=headers)
            wait_done(http, headers, [r.json()["task_id"]], 300)
            http.delete("/v1/memories/warm-up", headers=headers)
            if a.warm_up:  # another tenant's memories, through the whole pipeline: a warm JVM
                warm = new_tenant(http, admin, "bench-warm")
                t_warm, cpu_warm = time.perf_counter(), cpu_seconds(node_pid)
                warm_ids = []
                for i in range(0, a.warm_up, a.batch):
                    chunk = warm_texts[i : i + a.batch]
                    body = {"memories": [{"content": t, "memory_id": f"w{i + j}"} for j, t in enumerate(chunk)]}
                    r = http.post("/v1/memories", json=body, headers=warm)
                    r.raise_for_status()
                    warm_ids.append(r.json()["task_id"])
                wait_done(http, warm, warm_ids, 3600)
                warm_s = time.perf_counter() - t_warm
                node_cpu = (cpu_seconds(node_pid) - cpu_warm) * 1000 / a.warm_up
                print(
                    f"warm-up: {a.warm_up} memories of another tenant in {warm_s:.1f}s"
                    f" ({a.warm_up / warm_s:.1f}/s; OpenSearch {node_cpu:.1f} CPU s per 1,000 on a cold node)"
                )

            if a.settle_s and node is not None:
                settle_engine(client, settings, node_pid, texts, vectors, a.settle_s)

            parts = {"worker": worker.pid, "API": api.pid, "Redis": redis.pid(), "OpenSearch": node_pid}
            cpu0 = {k: cpu_seconds(pid) for k, pid in parts.items()}
            jvm0 = jvm_threads(node_pid)
            engine0 = engine_counters(client)
            t0 = time.perf_counter()
            task_ids = []
            for i in range(0, a.n, a.batch):
                body = {
                    "memories": [{"content": t, "memory_id": f"b{i + j}"} for j, t in enumerate(texts[i : i + a.batch])]
                }
                r = http.post("/v1/memories", json=body, headers=headers)
                r.raise_for_status()
                task_ids.append(r.json()["task_id"])
            t_queued = time.perf_counter() - t0
            results = wait_done(http, headers, task_ids, 3600)
            client.indices.refresh(index=settings.memories_alias)
            count = client.count(index=settings.memories_alias, body={"query": {"term": {"tenant_id": "bench"}}})[
                "count"
            ]
            elapsed = time.perf_counter() - t0
            cpu = {k: cpu_seconds(pid) - cpu0[k] for k, pid in parts.items()}
            jvm = jvm_delta(jvm_threads(node_pid), jvm0, cpu["OpenSearch"])
            engine = counters_delta(engine_counters(client), engine0)
            indexed = sum(r["indexed"] for r in results)
            failed = sum(r["failed"] for r in results)
            # searchable by text and by vector, in the measured tenant (the others hold the same texts)
            mine = {"term": {"tenant_id": "bench"}}
            bm25 = client.search(
                index=settings.memories_alias,
                body={"query": {"bool": {"must": {"match": {"content": texts[123]}}, "filter": mine}}, "size": 1},
            )
            vec = bm25["hits"]["hits"][0]["_source"]["embedding"] if bm25["hits"]["hits"] else None
            knn = client.search(
                index=settings.memories_alias,
                body={"query": {"knn": {"embedding": {"vector": vec, "k": 1, "filter": mine}}}, "size": 1},
            )
        finally:
            http.close()
            stop(api)
            stop(worker)
            if redis_started:
                redis.stop()

        with on_cpus(embed_cpus):
            bare_after, bare_cpu_after, _ = bare_embedding(settings, texts, settings.bulk_max_docs)
        e2e = a.n / elapsed
        bare = (bare_before + bare_after) / 2
        print(f"bare embedder (after):  {bare_after:.1f} memories/s, {bare_cpu_after:.1f} CPU s")
        print(f"queued {a.n} memories in {t_queued:.1f}s ({len(task_ids)} requests)")
        print(
            f"end to end: {indexed} indexed, {failed} failed, {count} searchable in {elapsed:.1f}s"
            f" → {e2e:.1f} memories/s"
        )
        print(
            f"top BM25 hit for text #123: {bm25['hits']['hits'][0]['_source']['memory_id'] if vec else None}; "
            f"kNN with its vector finds: {knn['hits']['hits'][0]['_source']['memory_id'] if vec else None}"
        )
        print(
            f"RESULT end-to-end {e2e:.1f}/s vs bare embedding {bare:.1f}/s (mean of before/after)"
            f" = {100 * e2e / bare:.0f}%"
        )
        per_k = 1000 / a.n
        bare_cpu = (bare_cpu_before + bare_cpu_after) / 2
        pipeline_cpu = sum(cpu.values())
        print(
            f"CPU s per 1,000 memories: bare embedding {bare_cpu * per_k:.1f}; pipeline {pipeline_cpu * per_k:.1f} = "
            + " + ".join(f"{k} {v * per_k:.1f}" for k, v in cpu.items())
        )
        if node is not None:
            print(f"OpenSearch CPU s during the measured run by thread kind: {jvm}")
            print("OpenSearch work during the measured run, by index and thread pool:")
            for line in engine:
                print(f"  {line}")
            print(f"RESULT CPU-bound ratio (bare embedding CPU / pipeline CPU) = {100 * bare_cpu / pipeline_cpu:.0f}%")
        if not a.keep:
            delete_indices(client, settings)
        client.close()
        if count != a.n or failed:
            raise SystemExit("FAILED: not every memory is searchable")

    finally:
        if node is not None:
            node.stop()


if __name__ == "__main__":
    main()
