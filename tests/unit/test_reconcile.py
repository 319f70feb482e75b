"""The reconciler's pure parts: task ids out of kombu's Redis messages, and which jobs are lost."""

from __future__ import annotations

import json

from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.ingest.reconcile import lost_jobs, message_task_id, reconcile


def _message(task_id: str) -> str:
    return json.dumps({"body": "e30=", "headers": {"id": task_id, "task": "brain.ingest_batch"}, "properties": {}})


def test_task_ids_from_queued_and_unacknowledged_messages() -> None:
    assert message_task_id(_message("t1")) == "t1"
    assert message_task_id(json.dumps([json.loads(_message("t2")), "", "q"])) == "t2"
    assert message_task_id("not json") is None
    assert message_task_id(json.dumps({"headers": {}})) is None


def test_only_jobs_without_a_message_are_queued_again() -> None:
    def payload(task_id: str) -> dict:
        job = IngestJob(task_id=task_id, tenant_id="acme", items=[MemoryItem(memory_id="m", content="c")])
        return job.model_dump(mode="json")

    candidates = [("t1", payload("t1")), ("t2", payload("t2"))]
    assert [j.task_id for j in lost_jobs(candidates, {"t1"})] == ["t2"]
    sent: list[str] = []
    scanned: list[bool] = []

    def present() -> set[str]:
        scanned.append(True)
        return {"t2"}

    assert reconcile(lambda: candidates, present, lambda job: sent.append(job.task_id)) == 1
    assert sent == ["t1"]
    # no candidate: Redis is not read at all
    assert reconcile(lambda: [], present, lambda job: sent.append(job.task_id)) == 0 and len(scanned) == 1
