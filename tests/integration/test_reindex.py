"""The re-embedding move (issue 53, store/moves.py) on the real engine: all-MiniLM-L6-v2's index
moved to multilingual-e5-small while writes, rewrites and deletes race it through the service's
own write path, and a `brain-search reindex` killed with SIGKILL in the middle of its copy,
then run again."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.base import E5_SMALL, recorded_encoder
from brain_search.encoders.factory import make_document_embedder
from brain_search.errors import NotFound
from brain_search.ingest.models import MemoryItem
from brain_search.ingest.modes import embedded_service
from brain_search.ingest.service import IngestService
from brain_search.store.following import FollowingEmbedder, IndexEncoder
from brain_search.store.index_move import IndexMove
from brain_search.store.indices import install_all
from brain_search.store.moves import MIN_GRACE_S
from brain_search.store.templates import delete_indices, index_encoder_meta
from tests.integration.ingest_support import kill_move_mid_copy, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

TENANT = "mover"


def _settings(stack_settings: Settings, suffix: str) -> Settings:
    return stack_settings.model_copy(
        update={"index_prefix": f"{stack_settings.index_prefix}-{suffix}", "embedding_model": "all-MiniLM-L6-v2"}
    )


def _service(client: OpenSearch, s: Settings) -> IngestService:
    """The embedded write path with the API's wiring: its encoder follows the index."""
    own = make_document_embedder(s)
    following = FollowingEmbedder(
        own,
        IndexEncoder(client, s.memories_alias, ttl_s=0.2),
        lambda name: make_document_embedder(s.model_copy(update={"embedding_model": name})),
    )
    return embedded_service(s, client, following)


def _write(svc: IngestService, items: dict[str, str]) -> None:
    job = svc.write(TENANT, [MemoryItem(memory_id=k, content=v) for k, v in items.items()], refresh=True)
    status = svc.wait(TENANT, job.task_id, 120)
    assert status.state.value == "succeeded", status


def _live(client: OpenSearch, s: Settings) -> list[dict[str, Any]]:
    client.indices.refresh(index=s.memories_alias)
    r = client.search(
        index=s.memories_alias,
        body={
            "query": {"term": {"tenant_id": TENANT}},
            "size": 10_000,
            "_source": ["memory_id", "content", "embedding", "embedding_model"],
        },
        params={"routing": TENANT},
    )
    return [h["_source"] for h in r["hits"]["hits"]]


def test_a_move_keeps_every_write_and_delete_that_races_it(client: OpenSearch, stack_settings: Settings) -> None:
    s = _settings(stack_settings, "mv")
    delete_indices(client, s)
    install_all(client, s)
    svc = _service(client, s)
    expected = {f"m{i}": f"Note {i}: the garden plan for week {i} and what to buy." for i in range(300)}
    _write(svc, expected)
    svc.delete(TENANT, "m0")
    del expected["m0"]

    raced = threading.Event()

    def race() -> None:  # writes, a rewrite and deletes accepted while the copy runs
        _write(svc, {f"n{i}": f"Written during the move, number {i}." for i in range(10)})
        _write(svc, {"m20": "Rewritten during the move: the garden moved to the balcony."})
        for i in range(10, 15):
            svc.delete(TENANT, f"m{i}")
        raced.set()

    started: list[threading.Thread] = []

    def progress(phase: str, seen: int, total: int) -> None:
        if phase == "copy" and not started:
            t = threading.Thread(target=race)
            t.start()
            started.append(t)

    e5 = make_document_embedder(s.model_copy(update={"embedding_model": E5_SMALL.name}))
    report = IndexMove(client, s, E5_SMALL, e5, grace_s=MIN_GRACE_S, progress=progress).run()
    started[0].join(120)
    assert raced.is_set()
    for i in range(10):
        expected[f"n{i}"] = f"Written during the move, number {i}."
    expected["m20"] = "Rewritten during the move: the garden moved to the balcony."
    for i in range(10, 15):
        del expected[f"m{i}"]
    # after the move, the same write path follows the index to e5
    _write(svc, {"p0": "Written after the move, in any language: el jardín está en el balcón."})
    expected["p0"] = "Written after the move, in any language: el jardín está en el balcón."

    assert report.target.endswith("-v2") and report.source.endswith("-v1")
    index = next(iter(client.indices.get_alias(name=s.memories_alias)))
    assert index == report.target
    assert recorded_encoder(index_encoder_meta(client, index))["name"] == E5_SMALL.name
    live = _live(client, s)
    ids = [d["memory_id"] for d in live]
    assert sorted(ids) == sorted(expected), set(ids) ^ set(expected)  # nothing lost, doubled or back
    assert all(d["content"] == expected[d["memory_id"]] for d in live)
    assert {d["embedding_model"] for d in live} == {E5_SMALL.name}
    vectors = e5.encode([d["content"] for d in live])
    stored = np.array([d["embedding"] for d in live], dtype=np.float32)
    assert float((vectors * stored).sum(axis=1).min()) > 0.999
    for gone in ("m0", "m10", "m14"):
        with pytest.raises(NotFound):
            svc.memories.read(TENANT, gone)
    svc.close()


def test_a_killed_move_resumes(client: OpenSearch, stack_settings: Settings) -> None:
    s = _settings(stack_settings, "mvk")
    delete_indices(client, s)
    install_all(client, s)
    svc = _service(client, s)
    expected = {
        f"k{i}": f"Memory {i} about the trip to Kyoto, day {i % 7}, and the temples we saw." for i in range(800)
    }
    _write(svc, expected)
    svc.close()
    env = worker_env(s, embedding_model=E5_SMALL.name)
    cmd = [sys.executable, "-m", "brain_search.commands.cli", "reindex", "--encoder", E5_SMALL.name, "--grace-s", "4"]
    kill_move_mid_copy(cmd, env)
    assert next(iter(client.indices.get_alias(name=s.memories_alias))).endswith("-v1")  # not swapped yet
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resumed" in done.stdout
    index = next(iter(client.indices.get_alias(name=s.memories_alias)))
    assert index.endswith("-v2")
    assert recorded_encoder(index_encoder_meta(client, index))["name"] == E5_SMALL.name
    ids = [d["memory_id"] for d in _live(client, s)]
    assert sorted(ids) == sorted(expected)
