"""Issue 68, item 2 on the real stack: one API and one worker process, two tenants. The tenant that
writes in six languages moves to an index of its own encoded by multilingual-e5-small while a
writer races the move; the English tenant beside it stays in the shared index on the default
encoder. Afterwards the moved tenant answers cross-lingual questions of the multilingual set
(R@5 ≥ 0.9), every raced write is there with an e5 vector, and the English tenant's recalls and
vectors are what they were."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.base import E5_SMALL
from brain_search.index_names import IndexNames
from brain_search.ingest.models import MemoryItem
from brain_search.store.moves import MIN_GRACE_S
from brain_search.store.placement import tenant_index
from brain_search.store.scope import tenant_documents
from brain_search.store.tenant_move import TenantMove
from tests.conftest import ADMIN_KEY
from tests.integration.ingest_support import tenant_headers, wait_task

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]
SET = Path(__file__).resolve().parents[2] / "lab" / "data" / "multilingual_set.json"


def _models(client: OpenSearch, index: str, tenant: str) -> dict[str, str]:
    """memory id → the encoder that wrote its vector, for the tenant's memories in ``index``."""
    client.indices.refresh(index=index)
    body = {"query": tenant_documents(tenant), "size": 10_000, "_source": ["memory_id", "embedding_model", "tenant_id"]}
    hits = client.search(index=index, body=body, params={"routing": tenant})["hits"]["hits"]
    return {h["_source"]["memory_id"]: h["_source"]["embedding_model"] for h in hits if h["_source"].get("tenant_id")}


def test_a_tenant_moved_to_e5_answers_across_languages_beside_an_english_one(
    wsettings: Settings, workers: Any, client: OpenSearch, as_role: Any
) -> None:
    from pydantic import SecretStr

    from brain_search.api.app import build_state, create_app

    data = json.loads(SET.read_text())
    s = as_role(wsettings.model_copy(update={"admin_key": SecretStr(ADMIN_KEY)}), "api")
    state = build_state(s)
    workers("w1")
    with TestClient(create_app(state=state)) as api:
        intl, eng = tenant_headers(api, "intl"), tenant_headers(api, "eng")
        memories = [{"memory_id": m["id"], "content": m["content"]} for m in data["memories"]]
        r = api.post("/v1/memories", json={"memories": memories, "refresh": True}, headers=intl)
        assert wait_task(api, intl, r.json()["task_id"], 180)["indexed"] == len(memories)
        english = [m for m in memories if m["memory_id"].startswith("en-")]
        r = api.post("/v1/memories", json={"memories": english, "refresh": True}, headers=eng)
        assert wait_task(api, eng, r.json()["task_id"], 180)["indexed"] == len(english)
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        mix = api.get("/v1/admin/tenants/intl/languages", headers=admin).json()
        assert mix["recommend"] == f"brain-search tenant-index intl --encoder {E5_SMALL.name}", mix
        assert mix["sampled"] == len(memories) and mix["share"] > 0.5 and not mix["own_index"], mix
        english_mix = api.get("/v1/admin/tenants/eng/languages", headers=admin).json()
        assert english_mix["recommend"] is None and english_mix["other_language"] == 0, english_mix
        question = next(q for q in data["questions"] if q["lang"] == "en" and q["answer"].startswith("en-"))
        eng_before = api.post("/v1/recall", json={"query": question["query"], "limit": 5}, headers=eng).json()

        tasks: list[str] = []

        def race() -> None:  # writes of the moving tenant through the API while the move runs
            for i in range(12):
                item = MemoryItem(memory_id=f"raced{i}", content=f"Nota {i}: el jardín necesita agua el día {i}.")
                tasks.append(state.ingest.write("intl", [item], refresh=True).task_id)

        writer = threading.Thread(target=race)
        writer.start()
        report = TenantMove(client, wsettings, "intl", grace_s=MIN_GRACE_S, encoder=E5_SMALL.name).run()
        writer.join(120)
        assert report.encoder == E5_SMALL.name
        for t in tasks:
            assert wait_task(api, intl, t, 180)["indexed"] == 1

        own = tenant_index(IndexNames.of(wsettings), "intl")
        models = _models(client, own, "intl")
        assert len(models) == len(memories) + 12
        assert set(models.values()) == {E5_SMALL.name}, models  # the raced writes too
        assert _models(client, wsettings.memories_alias, "intl") == {}
        assert set(_models(client, wsettings.memories_alias, "eng").values()) == {wsettings.embedding_model}

        cross = [q for q in data["questions"] if not q["answer"].startswith(q["lang"] + "-")]
        found = 0
        for q in cross:
            hits = api.post("/v1/recall", json={"query": q["query"], "limit": 5}, headers=intl).json()["results"]
            found += q["answer"] in [h["id"] for h in hits[:5]]
        recall_at_5 = found / len(cross)
        print(f"\ncross-lingual R@5 of the tenant on e5: {recall_at_5:.3f} ({found} of {len(cross)})")
        assert recall_at_5 >= 0.9

        eng_after = api.post("/v1/recall", json={"query": question["query"], "limit": 5}, headers=eng).json()
        assert [h["id"] for h in eng_after["results"]] == [h["id"] for h in eng_before["results"]]
        assert eng_after["results"][0]["id"] == question["answer"]
        moved = api.get("/v1/admin/tenants/intl/languages", headers=admin).json()
        assert moved["encoder"] == E5_SMALL.name and moved["own_index"] and moved["recommend"] is None, moved
        ready = api.get("/readyz").json()
        assert E5_SMALL.name in ready["encoders"]["loaded_mb"], ready
    state.ingest.close()
