"""The spool (workers/spool.py) on the real stack: Redis's contents are not trusted. An entry a
worker spooled (signed under the job key) is written; one put there by whoever can write Redis
(unsigned, or signed under another key) writes no dead letter into any tenant and ends no task:
it is dropped and counted (issue 54, item 10)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
import redis as redis_lib
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.ingest.signing import signing_keys
from brain_search.ingest.task_records import TaskRecords
from brain_search.store.client import make_client
from workers.spool import Spool, seal_entry

pytestmark = pytest.mark.integration


@pytest.fixture
def spool(redis_url: str, stack_settings: Settings) -> Iterator[Spool]:
    s = Spool(redis_url, stack_settings.index_prefix, signing_keys(stack_settings))
    s.redis.delete(s.key, s.refused_key)
    yield s
    s.redis.delete(s.key, s.refused_key)


def _entry(tenant: str, task_id: str, content: str) -> dict[str, object]:
    item = MemoryItem(memory_id="planted", content=content)
    return {
        "tenant_id": tenant,
        "task_id": task_id,
        "attempts": 1,
        "error": "gave up",
        "failures": [{"item": item.model_dump(mode="json"), "reason": "x", "status": 500, "type": "x"}],
    }


def test_forged_spool_entries_are_refused_and_counted(
    memories_index: str,
    client: OpenSearch,
    stack_settings: Settings,
    spool: Spool,
    as_role: Callable[[Settings, str], Settings],
    redis_url: str,
) -> None:
    worker = make_client(as_role(stack_settings, "worker"))
    records = TaskRecords(worker, stack_settings)
    letters = DeadLetterStore(worker, stack_settings)
    api_records = TaskRecords(make_client(as_role(stack_settings, "api")), stack_settings)
    live = IngestJob(task_id="spool-live", tenant_id="tenant-a", items=[MemoryItem(memory_id="m", content="kept")])
    api_records.create(live)
    ended = IngestJob(task_id="spool-ended", tenant_id="tenant-a", items=[MemoryItem(memory_id="e", content="lost")])
    api_records.create(ended)

    # what Redis access alone can write: the old unsigned format, the new one unsigned, one signed
    # under a key this deployment does not hold, and a value that is no entry at all
    forged = _entry("tenant-b", "spool-live", "planted by whoever writes Redis")
    raw = redis_lib.Redis.from_url(redis_url)
    raw.rpush(spool.key, json.dumps(forged))
    raw.rpush(spool.key, seal_entry(forged, []))
    raw.rpush(spool.key, seal_entry(forged, [b"a key the attacker made up"]))
    raw.rpush(spool.key, "not json")
    # and what a worker spooled when its retries were spent while OpenSearch was down
    item = ended.items[0]
    spool.give_up(
        "tenant-a", "spool-ended", [(item, ItemOutcome("e", False, False, 503, "unavailable", "down"))], 3, error="down"
    )

    assert spool.drain(letters, records) == 1
    assert len(spool) == 0 and spool.refused == 4
    read_letters, read_records = DeadLetterStore(client, stack_settings), TaskRecords(client, stack_settings)
    client.indices.refresh(index=read_letters.index)
    assert read_letters.list("tenant-b").total == 0  # nothing planted in another tenant
    assert [d.memory_id for d in read_letters.list("tenant-a").items] == ["e"]  # the worker's own entry
    assert read_records.get("tenant-a", "spool-ended").state.value == "failed"
    assert read_records.get("tenant-a", "spool-live").state.value == "queued"  # the live task is untouched
    src = client.get(index=read_records.index, id="spool-live")["_source"]
    assert src["payload"] is not None and src["state"] == "queued"  # its payload kept: it can be reconciled


def test_a_drained_spool_entry_replayed_writes_nothing(
    memories_index: str,
    client: OpenSearch,
    stack_settings: Settings,
    spool: Spool,
    as_role: Callable[[Settings, str], Settings],
) -> None:
    """Issue 66 (a code read): a signed entry read from Redis and pushed again after it was drained
    wrote its dead letters (with the memory's text) once more, after a forget had removed them."""
    worker = make_client(as_role(stack_settings, "worker"))
    records, letters = TaskRecords(worker, stack_settings), DeadLetterStore(worker, stack_settings)
    api_records = TaskRecords(make_client(as_role(stack_settings, "api")), stack_settings)
    job = IngestJob(task_id="spool-replay", tenant_id="tenant-a", items=[MemoryItem(memory_id="r", content="secret")])
    api_records.create(job)
    spool.give_up(
        "tenant-a", job.task_id, [(job.items[0], ItemOutcome("r", False, False, 503, "x", "down"))], 3, error="down"
    )
    signed = spool.redis.lindex(spool.key, 0)
    assert spool.drain(letters, records) == 1
    read = DeadLetterStore(client, stack_settings)
    client.indices.refresh(index=read.index)
    assert [d.memory_id for d in read.list("tenant-a").items] == ["r"]
    read.purge("tenant-a", memory_id="r")  # what a forget of it does
    spool.redis.rpush(spool.key, signed)  # the replay
    assert spool.drain(letters, records) == 0 and len(spool) == 0
    client.indices.refresh(index=read.index)
    assert read.list("tenant-a").total == 0  # the forgotten text did not come back
