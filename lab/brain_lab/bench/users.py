"""A user's recall in one big tenant of many users, against the same memories as a tenant of their
own, in one run (issue 67: "one tenant of 1M memories over 100k users ... engine CPU and p95 ≤ 1.2×").

What the index holds (``UsersLayout``): tenant ``org`` with ``size`` memories over ``users`` users
(``user-<k>``, ``size / users`` each: consecutive turns of one LoCoMo conversation, its real turns
then recycled copies, as ``shared.py``'s small tenants), and, for each user asked a question, the
same memories (same ids, texts and vectors) as a tenant of their own, ``solo-<k>``, without a
user, in the same index: what a backend that made a tenant per person would hold. Vectors are the
cached all-MiniLM-L6-v2 ones (recycled rows with Gaussian noise, ``corpus.py``), bulk-loaded
through the service's document (``build_memory_doc``), then the index force-merged to one segment.

Paths (``IN_ORG``, ``OWN``), interleaved question by question in a rotating order after an unmeasured pass over the
same questions (every path warm): ``Retriever.recall`` of ``org`` with the question's ``user_id``
(the scope is a filter inside the kNN and BM25 legs, ``store/scope.py``) and of ``solo-<k>`` with
none. Query vectors cached (the encoder is out). Figures as ``shards.py``: the node's CPU per recall
(net of its background, read over pauses as long as a recall), the index's own shard time, this
process's CPU, wall p50/p95; and how many answers are the same ids in the same order.

``request_cache`` (off by default): the engine's shard request cache answers a repeated count
(``size: 0``) from memory, so with it on every question's count is free after the warm-up pass; a
shard that takes writes drops it at each refresh, and a new question is never in it. Off, every
recall's count is computed, as under writes.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from opensearchpy import OpenSearch

from brain_lab.bench.corpus import Pool, cached_embedder, noised, replica_of, size_label
from brain_lab.bench.load import CachedVectors
from brain_lab.bench.shards import IDLE, IDLE_S, IndexMeter, PathCost, agreement, background_rate, ratio, rotated
from brain_lab.bench.shared import conversations
from brain_lab.eval.datasets import Memory
from brain_search.config import Settings
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.documents import build_memory_doc, memory_doc_id
from brain_search.store.templates import delete_indices, install_memories_index

PREFIX = "bt-users"
ORG = "org"
MAX_QUERY = 2000
IN_ORG = "user of a big tenant"
OWN = "own tenant"


@dataclass(frozen=True)
class UsersLayout:
    size: int
    users: int

    @property
    def per_user(self) -> int:
        return max(1, self.size // self.users)

    @property
    def documents(self) -> int:
        return self.per_user * self.users


def user_id(k: int) -> str:
    return f"user-{k:06d}"


def solo_tenant(k: int) -> str:
    return f"solo-{k:06d}"


def user_rows(
    pool: Pool, layout: UsersLayout, noise: float = 0.01, seed: int = 7
) -> Iterator[tuple[int, Memory, np.ndarray]]:
    """(user number, memory, vector) of every memory of ``org``, in a fixed order: user ``k`` holds
    ``per_user`` consecutive turns of conversation ``k mod conversations`` (recycled copies past
    its end, noised vectors), ids ``u<k>-<i>``."""
    by_conv = conversations(pool)
    convs = list(by_conv)
    rng = np.random.default_rng(seed)
    for k in range(layout.users):
        rows = by_conv[convs[k % len(convs)]]
        start = (k // len(convs)) * layout.per_user
        for i in range(layout.per_user):
            replica, j = divmod(start + i, len(rows))
            _, mem = pool.memories[rows[j]]
            mem = replica_of(mem, replica) if replica else mem
            yield (
                k,
                Memory(f"u{k}-{i}", mem.content, timestamp=mem.timestamp),
                noised(pool.vectors[rows[j]], rng, noise),
            )


def conversation_of(k: int, convs: Sequence[str]) -> str:
    """The conversation user ``k``'s memories come from (pure)."""
    return convs[k % len(convs)]


def questions(pool: Pool, layout: UsersLayout, n: int, seed: int = 19) -> list[tuple[int, str]]:
    """``n`` (random user, random question of its conversation) pairs, distinct users (pure)."""
    convs = list(conversations(pool))
    rng = random.Random(seed)
    users = rng.sample(range(layout.users), min(n, layout.users))
    out = []
    for k in users:
        qs = pool.queries.get(conversation_of(k, convs), [])
        if qs:
            out.append((k, rng.choice(qs)[:MAX_QUERY]))
    return out


def _action(index: str, tenant: str, owner: str | None, mem: Memory, vec: np.ndarray, model: str) -> dict[str, Any]:
    return {
        "_op_type": "index",
        "_id": memory_doc_id(tenant, mem.memory_id),
        "_routing": tenant,
        "_source": build_memory_doc(
            tenant_id=tenant,
            memory_id=mem.memory_id,
            content=mem.content,
            embedding=vec.tolist(),
            embedding_model=model,
            timestamp=mem.timestamp,
            user_id=owner,
        ),
    }


def users_settings(settings: Settings, layout: UsersLayout) -> Settings:
    return settings.model_copy(
        update={
            "index_prefix": f"{PREFIX}-{size_label(layout.size)}-{layout.users}",
            "shards": 1,
            "routing_partition_size": 1,
            "replicas": 0,
        }
    )


def build_users(
    client: OpenSearch,
    settings: Settings,
    pool: Pool,
    layout: UsersLayout,
    asked: set[int],
    *,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> tuple[str, float, float]:
    """The index (reused when it holds what it should); (index, load s, merge s)."""
    s = settings
    want = layout.documents + len(asked) * layout.per_user
    if not force and client.indices.exists_alias(name=s.memories_alias):
        client.indices.refresh(index=s.memories_alias)
        if int(client.count(index=s.memories_alias)["count"]) == want:
            return next(iter(client.indices.get_alias(name=s.memories_alias))), 0.0, 0.0
    delete_indices(client, s)
    index = install_memories_index(client, s, int(pool.vectors.shape[1]))
    client.indices.put_settings(index=index, body={"index": {"refresh_interval": "-1"}})
    model = s.embedding_model
    t0 = time.perf_counter()

    def actions() -> Iterator[dict[str, Any]]:
        for k, mem, vec in user_rows(pool, layout):
            yield _action(index, ORG, user_id(k), mem, vec, model)
            if k in asked:
                yield _action(index, solo_tenant(k), None, mem, vec, model)

    from opensearchpy.helpers import parallel_bulk

    failed = 0
    for done, (ok, _) in enumerate(
        parallel_bulk(client, actions(), index=index, thread_count=2, chunk_size=1000, raise_on_error=False),
        start=1,
    ):
        failed += not ok
        if done % 20_000 == 0:
            log(f"{index}: {done:,} / {want:,} ({done / (time.perf_counter() - t0):,.0f}/s)")
    if failed:
        raise RuntimeError(f"{failed} memories were not indexed into {index}")
    load_s = time.perf_counter() - t0
    client.indices.put_settings(index=index, body={"index": {"refresh_interval": "1s"}})
    client.indices.refresh(index=index)
    t1 = time.perf_counter()
    client.indices.forcemerge(index=index, max_num_segments=1, request_timeout=1800)
    return index, load_s, time.perf_counter() - t1


@dataclass
class UsersReport:
    layout: dict[str, int]
    index: str
    load_s: float
    merge_s: float
    questions: int
    rounds: int
    request_cache: bool
    load_avg_before: str
    load_avg_after: str
    paths: dict[str, dict[str, float]]
    same_answers: int
    background_cpu_ms_per_s: float


def run_users(
    client: OpenSearch,
    settings: Settings,
    pool: Pool,
    layout: UsersLayout,
    n: int,
    rounds: int = 2,
    *,
    request_cache: bool = False,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> UsersReport:
    """Build (or reuse) the index, then the two paths over the same ``n`` questions, ``rounds``
    times after an unmeasured pass."""
    s = users_settings(settings, layout)
    qs = questions(pool, layout, n)
    index, load_s, merge_s = build_users(client, s, pool, layout, {k for k, _ in qs}, force=force, log=log)
    log(f"{index}: {layout.documents:,} memories of {ORG} over {layout.users:,} users + {len(qs)} own tenants")
    client.indices.put_settings(index=index, body={"index": {"requests": {"cache": {"enable": request_cache}}}})
    texts = sorted({q for _, q in qs})
    vectors = CachedVectors(dict(zip(texts, cached_embedder(s).encode(texts), strict=True)))
    retriever = Retriever(client, s, vectors)

    def calls(k: int, text: str) -> list[tuple[str, Callable[[], Any]]]:
        return [
            (IN_ORG, partial(retriever.recall, ORG, RecallRequest(query=text, limit=10, user_id=user_id(k)))),
            (OWN, partial(retriever.recall, solo_tenant(k), RecallRequest(query=text, limit=10))),
        ]

    load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())
    log(f"warm-up: {len(qs)} users' questions through both paths")
    answers: dict[str, list[list[str]]] = {IN_ORG: [], OWN: []}
    for k, text in qs:
        for label, call in calls(k, text):
            answers[label].append([m.id for m in call().results])
    meter = IndexMeter(client)
    costs = {IN_ORG: PathCost(IN_ORG), OWN: PathCost(OWN)}
    idle = PathCost(IDLE)
    step = 0
    for rnd in range(rounds):
        for i, (k, text) in enumerate(qs, 1):
            for label, call in rotated(calls(k, text), step):
                meter.measure(costs[label], index, call)
            meter.measure(idle, index, partial(time.sleep, IDLE_S))
            step += 1
            if i % 100 == 0:
                log(f"round {rnd + 1}/{rounds}: {i}/{len(qs)} questions, load {os.getloadavg()[0]:.2f}")
    background = background_rate(idle)
    return UsersReport(
        layout={"documents": layout.documents, "users": layout.users, "per_user": layout.per_user},
        index=index,
        load_s=load_s,
        merge_s=merge_s,
        questions=len(qs),
        rounds=rounds,
        request_cache=request_cache,
        load_avg_before=load_before,
        load_avg_after="/".join(f"{x:.2f}" for x in os.getloadavg()),
        paths={label: c.figures(background) for label, c in costs.items()},
        same_answers=agreement(answers[OWN], answers[IN_ORG]),
        background_cpu_ms_per_s=background * 1000.0,
    )


def users_ratios(report: UsersReport) -> tuple[float, float, float]:
    """The big tenant's user over the tenant of their own: engine CPU (net), shard ms, p95 (pure)."""
    a, b = report.paths[IN_ORG], report.paths[OWN]
    return (
        ratio(a["engine_cpu_net_ms"], b["engine_cpu_net_ms"]),
        ratio(a["shard_ms"], b["shard_ms"]),
        ratio(a["p95_ms"], b["p95_ms"]),
    )


def drop_users(client: OpenSearch, settings: Settings, layout: UsersLayout) -> None:
    delete_indices(client, users_settings(settings, layout))
