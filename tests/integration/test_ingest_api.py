"""POST /v1/memories and friends on the real stack, embedded mode (no Redis): the same task code
runs on a thread pool in the API process."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from brain_search.ingest.models import IngestJob, MemoryItem
from tests.integration.ingest_support import memory_ids, tenant_headers, wait_task

pytestmark = pytest.mark.integration


def _post(api: Any, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    r = api.post("/v1/memories", json=body, headers=headers)
    assert r.status_code == 202, r.text
    return r.json()


def test_one_memory_round_trip_and_tenant_isolation(api, make_tenant) -> None:
    acme, other = make_tenant("acme"), make_tenant("other")
    assert api.app.state.brain.ingest.mode == "embedded"
    accepted = _post(api, acme, {"content": "The equity split is 53% for me", "memory_id": "m1", "refresh": True})
    assert accepted["submitted"] == 1 and accepted["memory_ids"] == ["m1"]
    task = wait_task(api, acme, accepted["task_id"])
    assert (task["state"], task["indexed"], task["failed"]) == ("succeeded", 1, 0)

    got = api.get("/v1/memories/m1", headers=acme)
    assert got.status_code == 200 and got.json()["content"] == "The equity split is 53% for me"
    assert "embedding" not in got.json()
    # another tenant sees neither the memory nor the task
    assert api.get("/v1/memories/m1", headers=other).status_code == 404
    assert api.get(f"/v1/tasks/{accepted['task_id']}", headers=other).status_code == 404
    assert api.delete("/v1/memories/m1", headers=other).status_code == 404
    assert api.get("/v1/tasks/nope", headers=acme).status_code == 404
    # searchable on completion (refresh: true) with both its text and its vector
    s = api.app.state.brain.settings
    client = api.app.state.brain.client
    r = client.search(index=s.memories_alias, body={"query": {"match_phrase": {"content": "53% for me"}}})
    assert r["hits"]["total"]["value"] == 1
    assert len(r["hits"]["hits"][0]["_source"]["embedding"]) == s.embedding_dimension

    assert api.delete("/v1/memories/m1", headers=acme).status_code == 204
    assert api.get("/v1/memories/m1", headers=acme).status_code == 404
    assert api.delete("/v1/memories/m1", headers=acme).status_code == 404


def test_batch_with_nodes_and_redelivery_does_not_duplicate(api, make_tenant) -> None:
    acme = make_tenant("acme")
    state = api.app.state.brain
    node = state.graph.create("acme", "aiConnected/Brain")
    batch = {
        "memories": [
            {"content": f"memory number {i}", "memory_id": f"b{i}", "node_id": "aiConnected/Brain", "source": "chat"}
            for i in range(40)
        ],
        "refresh": True,
    }
    for _ in range(2):  # the same batch twice
        task = wait_task(api, acme, _post(api, acme, batch)["task_id"])
        assert task["indexed"] == 40
    ids = memory_ids(state.client, state.settings, "acme")
    assert sorted(ids) == sorted(f"b{i}" for i in range(40))
    m = api.get("/v1/memories/b7", headers=acme).json()
    assert (m["node_id"], m["node_path"], m["source"]) == (node.id, "aiConnected/Brain", "chat")


def test_chunk_option_stores_a_long_document_as_overlapping_memories(api, make_tenant) -> None:
    acme = make_tenant("acme")
    text = " ".join(f"Sentence {i} talks about topic {i % 7}." for i in range(300))  # ~ 9,000 characters
    r = api.post("/v1/memories", json={"content": text, "memory_id": "doc"}, headers=acme)
    assert r.status_code == 422 and "chunk" in r.json()["detail"][0]["msg"]
    accepted = _post(api, acme, {"content": text, "memory_id": "doc", "chunk": True, "refresh": True})
    n = accepted["submitted"]
    assert n >= 9 and accepted["memory_ids"] == [f"doc#{i}" for i in range(n)]
    assert wait_task(api, acme, accepted["task_id"])["indexed"] == n
    piece = api.get(f"/v1/memories/{quote('doc#3')}", headers=acme).json()
    assert piece["metadata"] == {"chunk_of": "doc", "chunk_index": 3, "chunk_count": n}


BAD_REQUESTS = [  # one memory: its own field; a batch: the item (issue 55.7)
    ({"content": ""}, ["body", "content"]),
    ({"content": "   "}, ["body", "content"]),
    ({"memories": [{"content": "ok"}, {"content": "x" * 8001}]}, ["body", "memories", "1", "content"]),
    ({"content": "x", "timestamp": "8 May 2023, maybe"}, ["body", "timestamp"]),
    ({"content": "x", "node_id": "no/such/node"}, ["body", "node_id"]),
    ({"content": "x", "metadata": {"a": {"b": {"c": {"d": {"e": 1}}}}}}, ["body", "metadata"]),
    ({"content": "x", "metadata": {"blob": "y" * 9000}}, ["body", "metadata"]),
    ({"memories": [{"content": f"m{i}"} for i in range(1001)]}, ["body", "memories"]),
    ({"memories": []}, ["body", "memories"]),
    ({"memories": [{"content": "a", "memory_id": "d"}, {"content": "b", "memory_id": "d"}]}, None),
    ({"content": "x", "memory_id": "has space"}, ["body", "memory_id"]),
    ({"content": "x", "tenant_id": "other"}, ["body", "tenant_id"]),  # never from the body
]


def test_bad_input_is_422_naming_the_field_and_nothing_is_queued(api, make_tenant) -> None:
    acme = make_tenant("acme")
    queue = api.app.state.brain.ingest.queue
    state = api.app.state.brain
    for body, loc in BAD_REQUESTS:
        case = str(body)[:80]
        r = api.post("/v1/memories", json=body, headers=acme)
        assert r.status_code == 422, (case, r.text)
        detail = r.json()["detail"]
        assert detail and detail[0]["msg"], case
        if loc is not None:
            assert [str(x) for x in detail[0]["loc"]] == [str(x) for x in loc], (case, detail)
        else:
            assert detail[0]["loc"][-1] == "memory_id" and "duplicate" in detail[0]["msg"], case
    assert queue.tasks_submitted == 0
    assert memory_ids(state.client, state.settings) == []


def test_requests_need_a_key(api) -> None:
    assert api.post("/v1/memories", json={"content": "x"}).status_code == 401
    assert api.get("/v1/dead-letters").status_code == 401


def test_malformed_item_goes_to_the_dead_letters_and_the_others_land(api, make_tenant) -> None:
    """A payload that passed the API but that OpenSearch rejects (here, a date it cannot parse,
    as an older client or a bug might send) ends in the dead-letter store; the others are indexed."""
    acme, other = make_tenant("acme"), make_tenant("other")
    service = api.app.state.brain.ingest
    items = [MemoryItem(memory_id=f"g{i}", content=f"good memory {i}") for i in range(5)]
    items.insert(2, MemoryItem(memory_id="bad", content="bad date", timestamp="2023-13-45"))
    job = IngestJob(task_id="t-malformed", tenant_id="acme", items=items, refresh=True)
    service.queue.submit(job)
    task = wait_task(api, acme, job.task_id)
    assert (task["state"], task["indexed"], task["failed"]) == ("succeeded", 5, 1)
    assert task["failures"][0]["memory_id"] == "bad" and task["failures"][0]["dead_lettered"]
    page = api.get("/v1/dead-letters", headers=acme).json()
    assert page["total"] == 1
    dead = page["items"][0]
    assert (dead["memory_id"], dead["task_id"], dead["status"]) == ("bad", "t-malformed", 400)
    assert dead["error_type"] == "mapper_parsing_exception" and "timestamp" in dead["reason"]
    assert dead["payload"]["content"] == "bad date" and dead["payload"]["timestamp"] == "2023-13-45"
    assert api.get("/v1/dead-letters", headers=other).json()["total"] == 0
    state = api.app.state.brain
    assert sorted(memory_ids(state.client, state.settings, "acme")) == [f"g{i}" for i in range(5)]


def test_a_refusal_while_dead_lettering_ends_the_task_without_retries(api, make_tenant, client) -> None:
    """Issue 42.3 on the real engine: the dead-letters index refuses writes with a 403 (an index
    write block, as a gateway's refusal would). That is not transient: the task ends at once,
    failed, its error naming the 403, instead of 8 retries over minutes. The memory OpenSearch
    took is stored; once the block is lifted, dead-lettering works again."""
    from brain_search.store.indices import IndexNames

    acme = make_tenant("acme")
    state = api.app.state.brain
    dead_letters = IndexNames.of(state.settings).dead_letters
    items = [
        MemoryItem(memory_id="good", content="a good memory"),
        MemoryItem(memory_id="bad", content="bad date", timestamp="2023-13-45"),
    ]
    job = IngestJob(task_id="t-refused", tenant_id="acme", items=items, refresh=True)
    client.indices.put_settings(index=dead_letters, body={"index.blocks.write": True})
    try:
        state.ingest.queue.submit(job)
        task = wait_task(api, acme, job.task_id, timeout_s=30)
    finally:
        client.indices.put_settings(index=dead_letters, body={"index.blocks.write": None})
    assert task["state"] == "failed", task
    assert "403 cluster_block_exception" in task["error"], task
    assert memory_ids(state.client, state.settings, "acme") == ["good"]
    after = IngestJob(task_id="t-after", tenant_id="acme", items=items[1:], refresh=True)
    state.ingest.queue.submit(after)
    assert wait_task(api, acme, after.task_id)["failed"] == 1
    assert api.get("/v1/dead-letters", headers=acme).json()["items"][0]["status"] == 400


def test_a_write_that_waits_answers_once_it_is_searchable(api, make_tenant) -> None:
    """``POST /v1/memories?wait=true``: no task to poll; a recall right after finds the memory."""
    acme = make_tenant("acme")
    r = api.post(
        "/v1/memories?wait=true", json={"content": "The Lisbon offsite is in May", "memory_id": "w1"}, headers=acme
    )
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["state"], out["indexed"], out["searchable"], out["memory_ids"]) == ("succeeded", 1, True, ["w1"])
    assert out["finished_at"] is not None
    hits = api.post("/v1/recall", json={"query": "Lisbon offsite"}, headers=acme).json()["results"]
    assert [h["id"] for h in hits][:1] == ["w1"]
    # a batch waits the same way
    batch = {"memories": [{"content": f"note {i} about Porto"} for i in range(3)]}
    r = api.post("/v1/memories", params={"wait": "true", "timeout": 30}, json=batch, headers=acme)
    assert r.status_code == 200 and r.json()["indexed"] == 3 and r.json()["searchable"]
    # the timeout is checked as any query parameter
    r = api.post("/v1/memories?wait=true&timeout=0", json={"content": "x"}, headers=acme)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "timeout"]


def test_a_write_that_waits_past_its_timeout_answers_202_with_its_task(wsettings, worker_api) -> None:
    """Worker mode with no worker running: the task stays queued; after the timeout the answer is
    202 with the task as it stands (and the write still lands once a worker takes it)."""
    acme = tenant_headers(worker_api, "acme")
    r = worker_api.post("/v1/memories?wait=true&timeout=0.5", json={"content": "queued only"}, headers=acme)
    assert r.status_code == 202, r.text
    out = r.json()
    assert out["state"] == "queued" and out["searchable"] is False and len(out["memory_ids"]) == 1
    assert worker_api.get(f"/v1/tasks/{out['task_id']}", headers=acme).json()["state"] == "queued"
