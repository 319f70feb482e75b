"""A real 3-node OpenSearch cluster on loopback: scores equal to one shard's, and no acknowledged
memory lost or doubled when a node is SIGKILLed under concurrent writes and searches.

The cluster is our own (ports 9221-9223 / 9321-9323, cluster ``bt-cluster``, 512 MB heap per
node), started once for the module and wiped at the end; the shared dev node is not touched.
The memories index has 3 shards, 1 replica and a routing partition of 2 (a tenant's documents
spread over 2 of the 3 shards). Vectors are deterministic pseudo-random unit vectors: these tests
are about the cluster, not the model.

Figures (time to start, failed requests, lost / doubled memories, time to green) are written to
``test-artifacts/cluster-report.json`` and printed (``pytest -s``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from brain_lab.eval.baselines import bm25_match
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, TransportError

from brain_search.config import Settings, load_settings
from brain_search.errors import StoreUnavailable
from brain_search.local.node import LocalCluster
from brain_search.models import MemoryResult, RecallRequest
from brain_search.retrieval.engine.queries import knn_query
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client
from brain_search.store.documents import build_memory_doc, memory_doc_id
from brain_search.store.indices import install_all
from brain_search.store.scope import scope_filter
from brain_search.store.templates import delete_indices

# bounded: the whole module (3-node start, three tests, wipe) takes a few minutes
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

HTTP_PORT = 9221
TRANSPORT_PORT = 9321
CLUSTER_NAME = "bt-cluster"
DIM = 384
REPORT = Path(__file__).resolve().parents[2] / "test-artifacts" / "cluster-report.json"

TENANTS = [f"tenant-{i}" for i in range(6)]
_WORDS = {
    "common": "the a of and to in for on with we our this that meeting notes plan idea",
    "tenant-0": "equity vesting cliff founders shares dilution cap table option pool",
    "tenant-1": "kubernetes helm chart replicas ingress autoscaling pod budget",
    "tenant-2": "recipe garlic tomato basil oven pasta olive dough",
    "tenant-3": "equity compensation salary bonus offer negotiation cto hire",
    "tenant-4": "opensearch shard replica index alias snapshot mapping analyzer",
    "tenant-5": "marathon training tempo interval recovery mileage shoes race",
}
WORDS = {k: v.split() for k, v in _WORDS.items()}
QUERIES = [
    ("tenant-0", "equity vesting for founders"),
    ("tenant-3", "equity offer for the cto"),
    ("tenant-1", "helm chart autoscaling"),
    ("tenant-4", "shard replica snapshot"),
    ("tenant-2", "garlic pasta"),
    ("tenant-5", "interval training plan"),
]


def _report(key: str, value: Any) -> None:
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    data[key] = value
    REPORT.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"\n[cluster] {key}: {json.dumps(value, sort_keys=True)}")


def _vector(key: str) -> list[float]:
    rng = np.random.default_rng(int(hashlib.sha256(key.encode()).hexdigest()[:12], 16))
    v = rng.standard_normal(DIM)
    return (v / np.linalg.norm(v)).astype(np.float32).tolist()


def _text(tenant: str, i: int) -> str:
    rng = random.Random(f"{tenant}:{i}")
    words = rng.choices(WORDS[tenant], k=rng.randint(3, 12)) + rng.choices(WORDS["common"], k=rng.randint(5, 25))
    rng.shuffle(words)
    return " ".join(words)


def _doc(tenant: str, i: int) -> tuple[str, dict[str, Any]]:
    mid = f"m{i:06d}"
    body = build_memory_doc(
        tenant_id=tenant,
        memory_id=mid,
        content=_text(tenant, i),
        embedding=_vector(f"{tenant}:{mid}"),
        embedding_model="pseudo-random-unit",
        node_id=f"{tenant}/notes",
    )
    return memory_doc_id(tenant, mid), body


def _bulk_body(items: list[tuple[str, str, dict[str, Any]]], index: str) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for doc_id, tenant, body in items:
        lines.append({"index": {"_id": doc_id, "routing": tenant}})
        lines.append(body)
    return lines


def _index_all(client: OpenSearch, index: str, items: list[tuple[str, str, dict[str, Any]]]) -> None:
    for start in range(0, len(items), 200):
        resp = client.bulk(body=_bulk_body(items[start : start + 200], index), index=index)
        assert not resp["errors"], [i for i in resp["items"] if i["index"].get("error")][:3]
    client.indices.refresh(index=index)


# ------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def base_settings() -> Settings:
    prefix = os.environ.get("BRAIN_TEST_INDEX_PREFIX", "brain-test")
    return load_settings(index_prefix=f"{prefix}-c3", shards=3, replicas=1, routing_partition_size=2,
                         opensearch_heap="512m")  # fmt: skip


@pytest.fixture(scope="module")
def cluster(base_settings: Settings) -> Iterator[LocalCluster]:
    c = LocalCluster(
        base_settings,
        nodes=3,
        http_port=HTTP_PORT,
        transport_port=TRANSPORT_PORT,
        cluster_name=CLUSTER_NAME,
        log=lambda m: print(f"[cluster] {m}"),
    )
    t0 = time.monotonic()
    c.start(timeout_s=480)
    _report("start_s", round(time.monotonic() - t0, 1))
    try:
        yield c
    finally:
        c.wipe()


@pytest.fixture(scope="module")
def settings3(base_settings: Settings, cluster: LocalCluster) -> Settings:
    urls = ",".join(f"http://127.0.0.1:{n.http_port}" for n in cluster.nodes)
    # the production client settings, over every node: a dead node is skipped by the client
    return base_settings.model_copy(update={"opensearch_url": urls, "opensearch_timeout_s": 30.0})


@pytest.fixture(scope="module")
def client(settings3: Settings) -> OpenSearch:
    return make_client(settings3)


def _wait_health(client: OpenSearch, status: str, index: str = "", timeout_s: float = 180.0) -> str:
    """Wait until the cluster (or one index) is at least ``status``; returns the status seen.

    Polled from here: the client reads a ``timeout`` query parameter as its own socket timeout."""
    rank = {"red": 0, "yellow": 1, "green": 2}
    deadline = time.monotonic() + timeout_s
    seen = "unreachable"
    while time.monotonic() < deadline:
        try:
            seen = client.cluster.health(index=index or None)["status"]
        except (OSConnectionError, ConnectionTimeout, TransportError):
            seen = "unreachable"
        if rank.get(seen, -1) >= rank[status]:
            return seen
        time.sleep(0.25)
    raise AssertionError(f"cluster health stayed {seen!r}, wanted {status!r} within {timeout_s:.0f}s")


def _wait_nodes(client: OpenSearch, n: int, timeout_s: float = 90.0) -> None:
    """Wait until the cluster counts ``n`` nodes (a killed node has been noticed as gone), so that a
    restart is not mistaken as done by a stale health answer."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if client.cluster.health()["number_of_nodes"] == n:
                return
        except (OSConnectionError, ConnectionTimeout, TransportError):
            pass
        time.sleep(0.25)
    raise AssertionError(f"the cluster did not count {n} nodes within {timeout_s:.0f}s")


def _fresh_index(client: OpenSearch, settings: Settings) -> str:
    delete_indices(client, settings)
    index = install_all(client, settings)
    _wait_health(client, "green", index)
    return index


# ------------------------------------------------------------------------------- (b) scores
def _ranked(resp: dict[str, Any]) -> list[tuple[str, float]]:
    """(memory id, score) best first; ties ordered by id, so shard order cannot reorder them."""
    hits = [(h["_source"]["memory_id"], float(h["_score"])) for h in resp["hits"]["hits"]]
    return sorted(hits, key=lambda h: (-round(h[1], 4), h[0]))


def _search(client: OpenSearch, alias: str, body: dict[str, Any], search_type: str) -> list[tuple[str, float]]:
    body = {**body, "size": 10, "_source": ["memory_id"]}
    return _ranked(client.search(index=alias, body=body, params={"search_type": search_type}))


class _Encoder:
    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        return np.asarray(_vector(f"query:{text}"), dtype=np.float32)


def _recall_rows(results: list[MemoryResult]) -> list[tuple[str, float, float, float, float]]:
    rows = [
        (r.id, round(r.scores.lexical, 4), round(r.scores.semantic, 4), round(r.scores.z_position, 4),
         round(r.scores.rank, 4))
        for r in results
    ]  # fmt: skip
    return sorted(rows, key=lambda r: (-r[4], r[0]))


def _same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    return [x[0] for x in a] == [x[0] for x in b] and all(
        abs(x[1] - y[1]) <= 1e-4 * max(1.0, abs(y[1])) for x, y in zip(a, b, strict=True)
    )


def test_three_shards_score_like_one_shard(client: OpenSearch, settings3: Settings) -> None:
    one = settings3.model_copy(
        update={"index_prefix": settings3.index_prefix[:-3] + "-c1", "shards": 1, "replicas": 0,
                "routing_partition_size": 1}
    )  # fmt: skip
    items = []
    for tenant in TENANTS:
        for i in range(120):
            doc_id, body = _doc(tenant, i)
            items.append((doc_id, tenant, body))
    idx3, idx1 = _fresh_index(client, settings3), _fresh_index(client, one)
    try:
        _compare(client, settings3, one, items, idx3, idx1)
    finally:
        # one shard, no replica: it would turn the cluster red in the node-loss test
        delete_indices(client, one)


def _compare(
    client: OpenSearch,
    settings3: Settings,
    one: Settings,
    items: list[tuple[str, str, dict[str, Any]]],
    idx3: str,
    idx1: str,
) -> None:
    _index_all(client, idx3, items)
    _index_all(client, idx1, items)
    shards = {s["shard"] for s in client.cat.shards(index=idx3, format="json") if s["prirep"] == "p"}
    assert len(shards) == 3
    # the partition is in effect (the template's number_of_routing_shards): each tenant on 2 of
    # the 3 shards, its routed search asks those 2 (without it, OpenSearch 3.5.0 kept each on 1)
    for tenant in TENANTS:
        routed = client.search_shards(index=idx3, params={"routing": tenant})["shards"]
        assert len(routed) == settings3.routing_partition_size == 2, (tenant, routed)

    compared = differs_without_dfs = 0
    for tenant, text in QUERIES:
        f = scope_filter(tenant)
        for body in (
            {"query": bm25_match(text, f)},
            {"query": knn_query(_vector(f"query:{text}"), 10, f, settings3.hnsw_ef_search)},
        ):
            three = _search(client, settings3.memories_alias, body, "dfs_query_then_fetch")
            single = _search(client, one.memories_alias, body, "dfs_query_then_fetch")
            assert len(three) == 10
            assert _same(three, single), (tenant, text, list(body["query"]), three, single)
            compared += 1
            plain = _search(client, settings3.memories_alias, body, "query_then_fetch")
            differs_without_dfs += not _same(plain, single)
    # the control: without the DFS phase, per-shard BM25 statistics do change the scores, so the
    # comparison above can fail
    assert differs_without_dfs > 0

    # the whole recall pipeline (one _msearch, fill-in, lexical precision, Z, ranking)
    recalled = []
    for tenant, text in QUERIES:
        req = RecallRequest(query=text, limit=10)
        three = Retriever(client, settings3, _Encoder()).recall(tenant, req).results
        single = Retriever(client, one, _Encoder()).recall(tenant, req).results
        recalled.append(_recall_rows(three) == _recall_rows(single))
    _report(
        "score_equality",
        {
            "queries_compared": compared,
            "differ_without_dfs": differs_without_dfs,
            "recall_equal": f"{sum(recalled)}/{len(recalled)}",
        },
    )
    assert all(recalled), recalled


# ------------------------------------------------------------------------------- (a) node loss
class Load:
    """Concurrent writers (bulk, deterministic ids, retried until every item is acknowledged) and a
    searcher, with counts of what failed."""

    def __init__(self, client: OpenSearch, index: str, items: list[tuple[str, str, dict[str, Any]]]) -> None:
        self.client, self.index = client, index
        self.batches = [items[i : i + 25] for i in range(0, len(items), 25)]
        self.lock = threading.Lock()
        self.acked: list[str] = []
        self.write_retries = 0  # bulk calls or items that had to be sent again
        self.write_gave_up = 0
        self.search_ok = 0
        self.search_retries = 0
        self.search_failed = 0  # failed after every retry
        self.writers_done = threading.Event()
        self.errors: list[str] = []

    def _retry(self, fn: Callable[[], Any], on_retry: Callable[[], None], tries: int = 12) -> Any:
        delay = 0.2
        for attempt in range(tries):
            try:
                return fn()
            except (OSConnectionError, ConnectionTimeout, TransportError) as exc:
                status = getattr(exc, "status_code", None)
                if isinstance(status, int) and status < 500 and status != 429:
                    raise
                if attempt == tries - 1:
                    raise
                on_retry()
                time.sleep(delay)
                delay = min(delay * 2, 3.0)
        raise AssertionError("unreachable")

    def _count(self, attr: str) -> Callable[[], None]:
        def inc() -> None:
            with self.lock:
                setattr(self, attr, getattr(self, attr) + 1)

        return inc

    def writer(self, batches: list[list[tuple[str, str, dict[str, Any]]]]) -> None:
        for batch in batches:
            pending = batch
            for _ in range(20):
                resp = self._retry(
                    lambda p=pending: self.client.bulk(body=_bulk_body(p, self.index), index=self.index),
                    self._count("write_retries"),
                )
                ok = {it["index"]["_id"] for it in resp["items"] if it["index"]["status"] in (200, 201)}
                with self.lock:
                    self.acked.extend(ok)
                pending = [p for p in pending if p[0] not in ok]
                if not pending:
                    break
                with self.lock:
                    self.write_retries += len(pending)
                time.sleep(0.5)
            else:
                with self.lock:
                    self.write_gave_up += len(pending)

    def searcher(self) -> None:
        n = 0
        while not self.writers_done.is_set():
            tenant, text = QUERIES[n % len(QUERIES)]
            f = scope_filter(tenant)
            body = {"query": bm25_match(text, f)} if n % 2 else {"query": knn_query(_vector(text), 10, f)}
            n += 1
            try:
                self._retry(
                    lambda b=body: self.client.search(
                        index=self.index, body=b, params={"search_type": "dfs_query_then_fetch"}
                    ),
                    self._count("search_retries"),
                    tries=6,
                )
                with self.lock:
                    self.search_ok += 1
            except Exception as exc:
                with self.lock:
                    self.search_failed += 1
                    self.errors.append(repr(exc)[:200])
            time.sleep(0.02)


class _FailedAttempts(logging.Handler):
    """Counts request attempts that failed inside the client (which then retried them on another
    node): opensearch-py logs each one as a warning."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.bulk = self.search = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg != "%s %s [status:%s request:%.3fs]":
            return
        url = str(record.args[1]) if isinstance(record.args, tuple) and len(record.args) > 1 else ""
        if "_bulk" in url:
            self.bulk += 1
        elif "_search" in url:
            self.search += 1


def _cluster_manager_index(client: OpenSearch, cluster: LocalCluster) -> int:
    name = client.cat.cluster_manager(format="json")[0]["node"]
    return [n.name for n in cluster.nodes].index(name)


def test_no_replica_and_a_node_killed_is_a_503_naming_the_shards_then_nothing_lost(
    client: OpenSearch, settings3: Settings, cluster: LocalCluster
) -> None:
    """3 shards, 0 replicas, one node SIGKILLed: a recall is routed to its tenant's shard, so a
    tenant whose shard was on that node gets a 503 (never a 200 with fewer hits, ``allow_partial``
    or not: none of its shards answered), and a tenant whose shard is alive gets the same answer as
    before; after the restart every memory is there (the shard was on disk)."""
    bare = settings3.model_copy(
        update={"index_prefix": settings3.index_prefix[:-3] + "-c0", "replicas": 0, "routing_partition_size": 1}
    )
    items = [(doc_id, tenant, body) for tenant in TENANTS for doc_id, body in (_doc(tenant, i) for i in range(50))]
    index = _fresh_index(client, bare)
    _index_all(client, index, items)
    primaries = [sh for sh in client.cat.shards(index=index, format="json") if sh["prirep"] == "p"]
    docs_on = {n.name: 0 for n in cluster.nodes}
    for sh in primaries:
        docs_on[sh["node"]] += int(sh["docs"] or 0)
    victim = max(range(len(cluster.nodes)), key=lambda i: docs_on[cluster.nodes[i].name])  # it holds memories
    lost_shards = {int(sh["shard"]) for sh in primaries if sh["node"] == cluster.nodes[victim].name}
    shard_of = {
        t: {c[0]["shard"] for c in client.search_shards(index=index, params={"routing": t})["shards"]} for t in TENANTS
    }
    lost = {t for t in TENANTS if shard_of[t] & lost_shards}
    assert lost, (shard_of, lost_shards)
    retriever = Retriever(client, bare, _Encoder())
    req = RecallRequest(query=QUERIES[0][1], limit=10)
    before = {t: [r.id for r in retriever.recall(t, req).results] for t in TENANTS}
    try:
        cluster.kill_node(victim)
        _wait_nodes(client, 2)
        outcomes: dict[str, str] = {}
        for t in TENANTS:
            try:
                got = [r.id for r in retriever.recall(t, req).results]
                outcomes[t] = "same" if got == before[t] else "different"
            except StoreUnavailable as exc:
                outcomes[t] = f"503: {exc}"
        partial: list[str] = []
        for t in sorted(lost):
            try:
                retriever.recall(t, req.model_copy(update={"allow_partial": True}))
                partial.append("200")
            except StoreUnavailable as exc:
                partial.append(f"503: {exc}"[:80])
        _report(
            "no_replica_node_kill",
            {"lost_shards": sorted(lost_shards), "docs_on": docs_on, "recall": outcomes, "allow_partial": partial},
        )
        assert all(outcomes[t].startswith("503") for t in lost), outcomes
        assert all(outcomes[t] == "same" for t in TENANTS if t not in lost), outcomes
        assert all(p.startswith("503") for p in partial), partial
    finally:
        cluster.start(timeout_s=480)
        _wait_health(client, "green", index)
    client.indices.refresh(index=index)
    assert client.count(index=index)["count"] == len(items)  # nothing lost
    assert {t: [r.id for r in retriever.recall(t, req).results] for t in TENANTS} == before
    delete_indices(client, bare)  # no replica: it would turn the cluster red in the tests below


def test_sigkill_a_node_under_load_loses_and_doubles_nothing(
    client: OpenSearch, settings3: Settings, cluster: LocalCluster
) -> None:
    index = _fresh_index(client, settings3)
    total = 3000
    items = []
    for i in range(total):
        tenant = TENANTS[i % len(TENANTS)]
        doc_id, body = _doc(tenant, i)
        items.append((doc_id, tenant, body))
    load = Load(client, index, items)
    attempts = _FailedAttempts()
    logging.getLogger("opensearch").addHandler(attempts)
    writers = [threading.Thread(target=load.writer, args=(load.batches[w::4],), name=f"writer-{w}") for w in range(4)]
    searcher = threading.Thread(target=load.searcher, name="searcher")
    t0 = time.monotonic()
    for t in [*writers, searcher]:
        t.start()

    # SIGKILL the elected cluster manager (the worst node to lose) once 40% is acknowledged
    while len(load.acked) < 0.4 * total and any(t.is_alive() for t in writers):
        time.sleep(0.05)
    victim = _cluster_manager_index(client, cluster)
    acked_at_kill = len(load.acked)
    cluster.kill_node(victim)
    killed_at = time.monotonic()
    for t in writers:
        t.join(timeout=480)
    load.writers_done.set()
    searcher.join(timeout=120)
    assert not any(t.is_alive() for t in [*writers, searcher]), "the load did not finish in time"
    load_s = time.monotonic() - t0
    logging.getLogger("opensearch").removeHandler(attempts)

    # the surviving nodes answer while one is down (yellow: every primary is there)
    status_while_down = _wait_health(client, "yellow", index)

    # restart the node: time until it answers, and until the cluster is green again
    _wait_nodes(client, 2)
    restart_at = time.monotonic()
    cluster.start(timeout_s=480)
    green_s = time.monotonic() - restart_at

    client.indices.refresh(index=index)
    acked = set(load.acked)
    count = client.count(index=index)["count"]
    doubles = client.search(
        index=index,
        body={"size": 0, "aggs": {"dup": {"terms": {"field": "memory_id", "min_doc_count": 2, "size": 10}}}},
    )["aggregations"]["dup"]["buckets"]
    present: set[str] = set()
    ids = sorted(acked)
    for start in range(0, len(ids), 500):
        resp = client.search(
            index=index,
            body={"size": 500, "_source": False, "query": {"ids": {"values": ids[start : start + 500]}}},
        )
        present.update(h["_id"] for h in resp["hits"]["hits"])
    lost = len(acked - present)

    _report(
        "node_kill",
        {
            "memories_written": total,
            "acknowledged": len(acked),
            "acknowledged_before_kill": acked_at_kill,
            "killed_node": cluster.nodes[victim].name + " (the elected cluster manager)",
            "lost": lost,
            "doubled": len(doubles),
            "docs_in_index": count,
            "client_failovers_bulk": attempts.bulk,
            "client_failovers_search": attempts.search,
            "write_retries": load.write_retries,
            "writes_given_up": load.write_gave_up,
            "searches_ok": load.search_ok,
            "search_retries": load.search_retries,
            "searches_failed_after_retries": load.search_failed,
            "status_while_down": status_while_down,
            "load_s": round(load_s, 1),
            "load_after_kill_s": round(restart_at - killed_at, 1),
            "restart_to_green_s": round(green_s, 1),
        },
    )
    assert load.write_gave_up == 0
    assert len(acked) == total
    assert lost == 0
    assert doubles == []
    assert count == total
    assert load.search_failed == 0, load.errors[:5]
    assert load.search_ok > 0
    assert status_while_down in ("yellow", "green")


# ------------------------------------------------------------------------------- the whole stack
API_PORTS = (18241, 18242)
REDIS_PORT = 6383
ADMIN_KEY = "bt-cluster-admin-key-not-secret"
# as in test_ingest_workers.py: a task cancelled by a lost broker comes back in under a minute
FAST_REDELIVERY = {
    "celery_task_time_limit_s": 40,
    "ingest_task_retry_cap_s": 2,
    "ingest_task_retry_base_s": 0.5,
    "celery_visibility_timeout_s": 45,
    "celery_unacked_restore_interval_s": 2,
}


def _stack_env(s: Settings, redis_url: str) -> dict[str, str]:
    from tests.integration.ingest_support import worker_env

    return worker_env(
        s,
        opensearch_url=s.opensearch_url,
        opensearch_timeout_s=s.opensearch_timeout_s,
        index_prefix=s.index_prefix,
        shards=s.shards,
        replicas=s.replicas,
        routing_partition_size=s.routing_partition_size,
        redis_url=redis_url,
        admin_key=ADMIN_KEY,
        **FAST_REDELIVERY,
    )


def _batch(n: int) -> list[dict[str, Any]]:
    tenant_words = TENANTS[n % len(TENANTS)]  # topic words of one of the tenants, for variety
    return [{"memory_id": f"m{n:05d}-{j}", "content": _text(tenant_words, n * 5 + j)} for j in range(5)]


def test_whole_stack_survives_node_redis_and_api_kills(
    client: OpenSearch, settings3: Settings, cluster: LocalCluster, tmp_path: Path
) -> None:
    """2 workers, 2 API processes, Redis, the 3-node cluster; under writes (POST /v1/memories) and
    recalls: SIGKILL an OpenSearch node (left down), SIGKILL Redis (restarted after 3 s),
    SIGKILL one API process. Every accepted task completes; every accepted memory is there once."""
    import redis as redis_lib

    from brain_search.local.redis_server import LocalRedis
    from tests.integration.cluster_support import ApiProcess, HttpLoad
    from tests.integration.ingest_support import WorkerProcess

    delete_indices(client, settings3)
    redis = LocalRedis(settings3, port=REDIS_PORT, log=lambda m: print(f"[cluster] {m}"))
    redis_url = redis.start()
    redis_lib.Redis.from_url(redis_url).flushall()  # our own instance: no task of an earlier run
    env = _stack_env(settings3, redis_url)
    apis = [ApiProcess(env, port, tmp_path / f"api-{port}.log") for port in API_PORTS]
    workers = [WorkerProcess(env, tmp_path / f"worker-{i}.log", f"w{i}") for i in (1, 2)]
    try:
        t0 = time.monotonic()
        apis[0].start()  # the first one installs the templates and indices
        starters = [threading.Thread(target=p.start) for p in [apis[1], *workers]]
        for t in starters:
            t.start()
        for t in starters:
            t.join(timeout=240)
        assert all(p.proc is not None and p.proc.poll() is None for p in [*apis, *workers])
        processes_s = time.monotonic() - t0

        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        r = httpx.post(f"{apis[0].url}/v1/admin/tenants", json={"tenant_id": "acme"}, headers=admin, timeout=30)
        assert r.status_code == 201, r.text
        r = httpx.post(f"{apis[0].url}/v1/admin/tenants/acme/keys", json={"label": "load"}, headers=admin, timeout=30)
        assert r.status_code == 201, r.text
        load = HttpLoad([a.url for a in apis], {"Authorization": f"Bearer {r.json()['key']}"}, _batch)
        threads = [threading.Thread(target=load.writer, args=(w, 2, 0.4)) for w in (0, 1)]
        threads += [threading.Thread(target=load.reader, args=([q for _, q in QUERIES], 0.2)) for _ in (0, 1)]
        for t in threads:
            t.start()

        time.sleep(4)
        victim = _cluster_manager_index(client, cluster)
        cluster.kill_node(victim)
        assert not cluster.status()[victim].alive
        # the node stays down for the rest of the module (its restart is measured by the test above)
        time.sleep(10)
        accepted_before_redis_kill = len(load.accepted)
        redis.stop(signal.SIGKILL)
        time.sleep(3)
        redis.start()
        time.sleep(5)
        in_flight_before_api_kill = dict(load.counts)
        apis[0].kill9()
        time.sleep(6)
        load.stop.set()
        for t in threads:
            t.join(timeout=120)
        load_s = time.monotonic() - t0 - processes_s

        t_drain = time.monotonic()
        states = load.task_states(timeout_s=240)
        drain_s = time.monotonic() - t_drain
        acked = {mid for _, mids in load.accepted for mid in mids}
        client.indices.refresh(index=settings3.memories_alias)
        count = client.count(index=settings3.memories_alias, body={"query": {"term": {"tenant_id": "acme"}}})["count"]
        doubles = client.search(
            index=settings3.memories_alias,
            body={"size": 0, "aggs": {"dup": {"terms": {"field": "memory_id", "min_doc_count": 2, "size": 10}}}},
        )["aggregations"]["dup"]["buckets"]
        present: set[str] = set()
        ids = sorted(acked)
        for start in range(0, len(ids), 500):
            resp = client.search(
                index=settings3.memories_alias,
                body={
                    "size": 500,
                    "_source": ["memory_id"],
                    "query": {"terms": {"memory_id": ids[start : start + 500]}},
                },
            )
            present.update(h["_source"]["memory_id"] for h in resp["hits"]["hits"])
        not_succeeded = {t: s.get("state") for t, s in states.items() if s.get("state") != "succeeded"}
        not_succeeded.update({t: "unknown" for t, _ in load.accepted if t not in states})
        in_flight_at_api_kill = load.counts["in_flight_errors"] - in_flight_before_api_kill["in_flight_errors"]
        _report(
            "whole_stack",
            {
                "processes": "2 API (uvicorn), 2 workers (Celery), Redis, 3 OpenSearch nodes",
                "processes_start_s": round(processes_s, 1),
                "load_s": round(load_s, 1),
                **load.counts,
                "tasks_accepted": len(load.accepted),
                "tasks_accepted_before_redis_kill": accepted_before_redis_kill,
                "tasks_not_succeeded": len(not_succeeded),
                "memories_accepted": len(acked),
                "lost": len(acked - present),
                "doubled": len(doubles),
                "docs_of_tenant": count,
                "in_flight_errors_at_api_kill": in_flight_at_api_kill,
                "killed_node": cluster.nodes[victim].name + " (the elected cluster manager; stays down)",
                "tasks_not_succeeded_detail": [
                    {k: states.get(t, {}).get(k) for k in ("state", "indexed", "failed", "error")}
                    for t in list(not_succeeded)[:3]
                ],
                "tasks_drain_s": round(drain_s, 1),
                "sample_errors": load.errors[:5],
            },
        )
        assert load.counts["failed_requests"] == 0, load.errors
        assert load.counts["writes_ok"] > 0 and load.counts["recalls_ok"] > 0
        # only requests in flight when a process died broke: at most one per client thread
        assert load.counts["in_flight_errors"] <= len(threads), load.errors
        assert acked - present == set()
        assert doubles == []
        assert count == len(acked)
        # every accepted task reports its outcome, Redis kill included: the status lives in the
        # durable task records (OpenSearch), not in Redis
        assert not not_succeeded, [(t, states.get(t)) for t in list(not_succeeded)[:5]]
    finally:
        for p in [*apis, *workers]:
            p.stop()
        redis.stop()
        delete_indices(client, settings3)
