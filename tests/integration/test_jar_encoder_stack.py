"""The encoders from Maven Central's jars on the real stack (issue 68): for bge-small-en-v1.5 and
e5-small-v2 each, an API and a `brain-search worker` process with `BRAIN_EMBEDDING_MODEL` set
write through Redis into an index that records the encoder, recall what they wrote (e5-small-v2's
API reading "query: ", its worker "passage: "), and a process with another encoder refuses the
index."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opensearchpy import OpenSearch
from pydantic import SecretStr

from brain_search.config import Settings
from brain_search.encoders.base import BGE_SMALL, E5_SMALL_V2, encoder_info, recorded_encoder
from brain_search.errors import SetupError
from brain_search.store.indices import ensure_indices, install_all
from brain_search.store.templates import delete_indices, index_encoder_meta
from tests.conftest import ADMIN_KEY
from tests.integration.ingest_support import WorkerProcess, worker_env
from tests.integration.test_answers import recall

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

NOTES = {
    "nurse": "My sister Lena works night shifts as a pediatric nurse at Denver Health.",
    "rent": "The rent for the flat on Cedar Street is 1,450 dollars a month, water included.",
    "q1": "For Q1 we decided to ship the new onboarding flow first and move the billing rewrite to Q2.",
    "peanuts": "I'm allergic to peanuts, so always check the ingredients before ordering.",
    "japan": "Booked the flights to Tokyo for October, then four nights in Kyoto.",
}


@pytest.fixture(params=[BGE_SMALL.name, E5_SMALL_V2.name])
def bge(request, stack_settings: Settings, redis_url: str, client: OpenSearch, as_role) -> Iterator[Settings]:  # type: ignore[no-untyped-def]
    prefix = f"{stack_settings.index_prefix}-bge{zlib.crc32(request.node.name.encode()) % 1000}"
    s = stack_settings.model_copy(
        update={"index_prefix": prefix, "redis_url": redis_url, "embedding_model": request.param}
    )
    delete_indices(client, s)
    install_all(client, s)
    yield s
    delete_indices(client, s)


def test_an_api_and_a_worker_write_and_recall_with_bge(
    bge: Settings, client: OpenSearch, as_role, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient

    from brain_search.api.app import build_state, create_app

    meta = index_encoder_meta(client, bge.memories_alias)
    info = encoder_info(bge.embedding_model)
    assert recorded_encoder(meta)["name"] == info.name and recorded_encoder(meta)["version"] == info.version
    worker = WorkerProcess(worker_env(as_role(bge, "worker")), tmp_path / "worker.log", "bge-worker").start()
    state = build_state(as_role(bge.model_copy(update={"admin_key": SecretStr(ADMIN_KEY)}), "api"))
    try:
        assert state.retriever.encoder_name() == info.name
        with TestClient(create_app(state=state)) as api:
            admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
            assert api.post("/v1/admin/tenants", json={"tenant_id": "bge-user"}, headers=admin).status_code == 201
            key = api.post("/v1/admin/tenants/bge-user/keys", json={"label": "t"}, headers=admin).json()["key"]
            headers = {"Authorization": f"Bearer {key}"}
            body = {"memories": [{"memory_id": k, "content": v} for k, v in NOTES.items()], "refresh": True}
            r = api.post("/v1/memories", json=body, headers=headers)
            assert r.status_code == 202, r.text
            task = wait_done(api, headers, r.json()["task_id"])
            assert task["state"] == "succeeded", (task, worker.log()[-2000:])
            asked = {
                "What does my sister do for a living?": "nurse",
                "How much do I pay for my apartment?": "rent",
                "What's the plan for the first quarter?": "q1",
                "Which food should I avoid?": "peanuts",
                "Where am I travelling in the autumn?": "japan",
            }
            for query, answer in asked.items():
                out = recall(api, headers, query=query)
                assert out["results"][0]["id"] == answer, (query, [(x["id"], x["scores"]) for x in out["results"]])
    finally:
        state.ingest.close()
        worker.stop()
    client.indices.refresh(index=bge.memories_alias)
    hits = client.search(index=bge.memories_alias, body={"query": {"term": {"tenant_id": "bge-user"}}, "size": 20})
    docs = [h["_source"] for h in hits["hits"]["hits"]]
    assert len(docs) == len(NOTES) and {d["embedding_model"] for d in docs} == {info.name}
    # the worker wrote the vectors (the API only queues in worker mode): the int8 model's, unit length
    assert "bge-worker" in worker.log()


def test_a_process_with_another_encoder_refuses_the_bge_index(bge: Settings, client: OpenSearch) -> None:
    minilm = bge.model_copy(update={"embedding_model": "all-MiniLM-L6-v2"})
    with pytest.raises(SetupError, match=re.escape(bge.embedding_model)):
        ensure_indices(client, minilm, 384)


def wait_done(api: Any, headers: dict[str, str], task_id: str, timeout_s: float = 120) -> dict[str, Any]:
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        task: dict[str, Any] = api.get(f"/v1/tasks/{task_id}", headers=headers).json()
        if task["state"] in ("succeeded", "failed", "dead") or time.monotonic() > deadline:
            return task
        time.sleep(0.2)
