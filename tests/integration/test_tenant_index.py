"""A tenant's own index (issue 56, store/tenant_move.py) on the real engine: a tenant moved out of
the shared index while writes, rewrites and deletes race it (one writer following the placement,
one that still holds the old one through the grace), a `brain-search tenant-index` killed with
SIGKILL in the middle of its copy and run again, and the tenant's reads and writes after the move."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.factory import make_document_embedder, make_query_embedder
from brain_search.encoders.queries import QueryCache
from brain_search.errors import NotFound
from brain_search.index_names import IndexNames
from brain_search.ingest.models import MemoryItem
from brain_search.ingest.modes import embedded_service
from brain_search.ingest.service import IngestService
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client
from brain_search.store.indices import install_all
from brain_search.store.moves import MIN_GRACE_S
from brain_search.store.placement import placement_for, tenant_alias, tenant_index
from brain_search.store.scope import tenant_documents
from brain_search.store.templates import delete_indices
from brain_search.store.tenant_move import TenantMove
from brain_search.tenancy.auth import KeyStore
from tests.integration.ingest_support import kill_move_mid_copy, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

TENANT, OTHER = "Mover.1", "stayer"
FACTS = {
    "dentist": "The dentist appointment is on Tuesday at three in the afternoon.",
    "sister": "My sister Clara lives in Porto and teaches violin.",
    "wifi": "The wifi password at the cabin is tangerine42.",
    "bike": "The bike needs a new chain before the race in June.",
}
QUERIES = ("when is the dentist appointment", "where does my sister live", "what is the cabin wifi password")


def _settings(stack_settings: Settings, suffix: str) -> Settings:
    s = stack_settings.model_copy(update={"index_prefix": f"{stack_settings.index_prefix}-{suffix}"})
    client = make_client(s)
    delete_indices(client, s)
    install_all(client, s)
    keys = KeyStore(client, s)
    for t in (TENANT, OTHER):
        keys.create_tenant(t)
    return s


def _write(svc: IngestService, tenant: str, items: dict[str, str]) -> None:
    job = svc.write(tenant, [MemoryItem(memory_id=k, content=v) for k, v in items.items()], refresh=True)
    status = svc.wait(tenant, job.task_id, 120)
    assert status.state.value == "succeeded", status


def _docs(client: OpenSearch, index: str, tenant: str) -> list[dict[str, Any]]:
    """Every document of ``tenant`` in ``index`` (memories and tombstones)."""
    client.indices.refresh(index=index)
    r = client.search(
        index=index,
        body={"query": tenant_documents(tenant), "size": 10_000, "_source": ["memory_id", "content", "tenant_id"]},
        params={"routing": tenant},
    )
    return [{**h["_source"], "_index": h["_index"]} for h in r["hits"]["hits"]]


def _live(client: OpenSearch, index: str, tenant: str) -> dict[str, str]:
    """memory id → content of the tenant's live memories in ``index``; each id must be there once."""
    docs = [d for d in _docs(client, index, tenant) if d.get("tenant_id") == tenant]
    ids = [d["memory_id"] for d in docs]
    assert len(ids) == len(set(ids)), "a memory is there twice"
    return {d["memory_id"]: d["content"] for d in docs}


def _recalls(retriever: Retriever, tenant: str) -> list[list[str]]:
    return [[r.id for r in retriever.recall(tenant, RecallRequest(query=q, limit=5)).results] for q in QUERIES]


def test_a_tenant_moved_online_keeps_every_write_and_delete_and_its_recalls(
    client: OpenSearch, stack_settings: Settings
) -> None:
    s = _settings(stack_settings, "tm")
    names = IndexNames.of(s)
    svc = embedded_service(s, client, make_document_embedder(s))
    expected = {f"m{i}": f"Note {i}: the garden plan for week {i} and what to buy." for i in range(300)}
    expected.update(FACTS)
    _write(svc, TENANT, expected)
    others = {f"o{i}": f"Another tenant's note {i} about the dentist and the wifi." for i in range(50)}
    _write(svc, OTHER, others)
    svc.delete(TENANT, "m0")
    del expected["m0"]
    retriever = Retriever(client, s, QueryCache(make_query_embedder(s), 2**20))
    before = _recalls(retriever, TENANT)
    other_before = _recalls(retriever, OTHER)

    # a writer that still holds the old placement through the grace (its own client, its cache kept)
    stale_client = make_client(s)
    stale = embedded_service(s, stale_client, make_document_embedder(s))
    placement_for(stale_client, s).ttl_s = 3600
    assert stale.memories.index(TENANT) == names.memories_alias

    threads: list[threading.Thread] = []
    done = {"copy": threading.Event(), "grace": threading.Event()}

    def during_copy() -> None:  # writes, a rewrite and deletes accepted while the copy runs
        _write(svc, TENANT, {f"n{i}": f"Written during the move, number {i}." for i in range(10)})
        _write(svc, TENANT, {"m20": "Rewritten during the move: the garden moved to the balcony."})
        for i in range(10, 15):
            svc.delete(TENANT, f"m{i}")
        done["copy"].set()

    def during_grace() -> None:  # after the swap: one writer followed, one did not
        _write(svc, TENANT, {"g0": "Written after the swap by a writer that followed it."})
        _write(stale, TENANT, {"g1": "Written after the swap by a writer still on the shared index."})
        _write(stale, TENANT, {"m30": "Rewritten after the swap by the stale writer."})
        stale.delete(TENANT, "m31")
        svc.delete(TENANT, "m32")
        done["grace"].set()

    def progress(phase: str, seen: int, total: int) -> None:
        for key, job in (("copy", during_copy), ("grace", during_grace)):
            if phase.startswith(key) and not any(t.name == key for t in threads):
                t = threading.Thread(target=job, name=key)
                t.start()
                threads.append(t)
                if key == "grace":
                    t.join(120)  # what the stale writer does lands before the final pass

    report = TenantMove(client, s, TENANT, grace_s=MIN_GRACE_S, progress=progress).run()
    for t in threads:
        t.join(120)
    assert done["copy"].is_set() and done["grace"].is_set()
    for i in range(10):
        expected[f"n{i}"] = f"Written during the move, number {i}."
    expected["m20"] = "Rewritten during the move: the garden moved to the balcony."
    expected["g0"] = "Written after the swap by a writer that followed it."
    expected["g1"] = "Written after the swap by a writer still on the shared index."
    expected["m30"] = "Rewritten after the swap by the stale writer."
    for gone in ("m10", "m11", "m12", "m13", "m14", "m31", "m32"):
        del expected[gone]

    own = tenant_index(names, TENANT)
    assert (report.source, report.target) == (next(iter(client.indices.get_alias(name=s.memories_alias))), own)
    assert not report.resumed and set(report.passes) == {"copy", "catch-up", "final", "purge"}
    assert report.passes["final"].written >= 3  # the stale writer's two writes and its delete
    assert next(iter(client.indices.get_alias(name=tenant_alias(names, TENANT)))) == own
    live = _live(client, own, TENANT)
    assert live == expected, set(live) ^ set(expected)  # nothing lost, doubled or back
    assert _docs(client, s.memories_alias, TENANT) == []  # no second copy, no tombstone left behind
    for gone in ("m0", "m10", "m31", "m32"):
        with pytest.raises(NotFound):
            svc.memories.read(TENANT, gone)
    assert svc.memories.read(TENANT, "m30").source["content"] == expected["m30"]

    # the other tenant: untouched, still in the shared index
    assert _live(client, s.memories_alias, OTHER) == others
    assert _docs(client, own, OTHER) == []
    assert _recalls(retriever, OTHER) == other_before

    after = _recalls(retriever, TENANT)
    assert [a[0] for a in after] == [b[0] for b in before] == ["dentist", "sister", "wifi"]
    changed = {"m10", "m11", "m12", "m13", "m14", "m20", "m30", "m31", "m32"}
    new = changed | {f"n{i}" for i in range(10)} | {"g0", "g1"}
    for b, a in zip(before, after, strict=True):  # the same memories in the same order, plus the new writes
        kept = [x for x in a if x not in new]
        assert kept == [x for x in b if x not in changed][: len(kept)], (before, after)
    # a second run has nothing to do
    again = TenantMove(client, s, TENANT, grace_s=MIN_GRACE_S).run()
    assert again.resumed and again.passes == {}
    for x in (svc, stale):
        x.close()
    stale_client.close()
    delete_indices(client, s)


def test_a_killed_tenant_move_resumes(client: OpenSearch, stack_settings: Settings) -> None:
    s = _settings(stack_settings, "tmk")
    names = IndexNames.of(s)
    svc = embedded_service(s, client, make_document_embedder(s))
    expected = {
        f"k{i}": f"Memory {i} about the trip to Kyoto, day {i % 7}, and the temples we saw." for i in range(800)
    }
    _write(svc, TENANT, expected)
    _write(svc, OTHER, {"o1": "Stays in the shared index."})
    svc.close()
    env = worker_env(s)
    cmd = [sys.executable, "-m", "brain_search.commands.cli", "tenant-index", TENANT, "--grace-s", "4"]
    kill_move_mid_copy(cmd, env)
    own = tenant_index(names, TENANT)
    assert client.indices.exists(index=own)
    assert not client.indices.exists_alias(name=tenant_alias(names, TENANT))  # not swapped yet
    assert len(_live(client, s.memories_alias, TENANT)) == 800  # the shared index serves meanwhile
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resumed" in done.stdout
    assert sorted(_live(client, own, TENANT)) == sorted(expected)
    assert _docs(client, s.memories_alias, TENANT) == []
    assert _live(client, s.memories_alias, OTHER) == {"o1": "Stays in the shared index."}
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "already has its own index" in again.stdout, again.stdout + again.stderr
    delete_indices(client, s)


def test_after_the_move_reads_and_writes_go_to_the_tenant_index(client: OpenSearch, stack_settings: Settings) -> None:
    s = _settings(stack_settings, "tmw")
    names = IndexNames.of(s)
    svc = embedded_service(s, client, make_document_embedder(s))
    _write(svc, TENANT, dict(FACTS))
    _write(svc, OTHER, {"o1": "The other tenant's dentist is on Friday."})
    TenantMove(client, s, TENANT, grace_s=MIN_GRACE_S).run()
    own, alias = tenant_index(names, TENANT), tenant_alias(names, TENANT)
    assert svc.memories.index(TENANT) == alias and svc.memories.index(OTHER) == s.memories_alias

    _write(svc, TENANT, {"p0": "Written after the move: the dentist moved to Wednesday."})
    svc.delete(TENANT, "bike")
    docs = {d["memory_id"]: d["_index"] for d in _docs(client, alias, TENANT)}
    assert docs["p0"] == own and docs["bike"] == own  # the write and the delete's tombstone
    assert _docs(client, s.memories_alias, TENANT) == []
    _write(svc, OTHER, {"o2": "Still written to the shared index."})
    assert {d["_index"] for d in _docs(client, s.memories_alias, OTHER)} == {
        next(iter(client.indices.get_alias(name=s.memories_alias)))
    }
    assert svc.memories.read(TENANT, "p0").source["content"].startswith("Written after the move")
    with pytest.raises(NotFound):
        svc.memories.read(TENANT, "bike")
    retriever = Retriever(client, s, QueryCache(make_query_embedder(s), 2**20))
    hits = [r.id for r in retriever.recall(TENANT, RecallRequest(query="when is the dentist", limit=5)).results]
    assert "p0" in hits and "dentist" in hits and "o1" not in hits
    others = [r.id for r in retriever.recall(OTHER, RecallRequest(query="when is the dentist", limit=5)).results]
    assert others[0] == "o1" and "p0" not in others
    svc.close()
    delete_indices(client, s)
