"""The pipeline against a scripted fake OpenSearch: what goes on the wire, per-item retries,
deadline → pending, bad vectors → permanent, and the attempt/retry/dead-letter bookkeeping."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from opensearchpy.exceptions import ConnectionError as OSConnectionError

from brain_search.config import load_settings
from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.execute import Done, RetryLater, run_attempt
from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.ingest.pipeline import IngestPipeline
from brain_search.store.documents import memory_doc_id
from tests.unit.fakes import NoOwnIndices

S = load_settings(
    embedding_dimension=4,
    embedding_batch_size=2,
    bulk_max_docs=3,
    ingest_retry_deadline_s=10,
    ingest_task_max_retries=1,
)


class FakeEmbedder:
    name = "fake"
    dimension = 4

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([[0.0, 0.0, 0.0, 0.0] if t == "zero" else [1.0, 0.0, 0.0, 0.0] for t in texts], np.float32)


class FakeClient:
    """Answers each _bulk with the next script entry: a dict id→status, or an exception."""

    indices = NoOwnIndices()

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.requests: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []

    def bulk(self, body: bytes, params: dict[str, Any], index: str | None = None) -> dict[str, Any]:
        assert index == S.memories_alias  # the index in the path, never in the body
        lines = [json.loads(x) for x in body.decode().splitlines()]
        self.requests.append((lines, params))
        step = self.script.pop(0) if self.script else {}
        if isinstance(step, Exception):
            raise step
        items = []
        for _action, source in zip(lines[::2], lines[1::2], strict=True):
            status = step.get(source["memory_id"], 201)
            result: dict[str, Any] = {"status": status}
            if status >= 300:
                result["error"] = {"type": "t", "reason": f"status {status}"}
            items.append({"index": result})
        return {"errors": any(i["index"]["status"] >= 300 for i in items), "items": items}

    def mget(self, index: str, body: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        """Nothing stored before (no earlier pieces, no tombstones)."""
        return {"docs": [{"_id": d["_id"], "found": False} for d in body["docs"]]}


class FakeDeadLetters:
    def __init__(self) -> None:
        self.added: list[tuple[str, list[tuple[MemoryItem, ItemOutcome]]]] = []

    def add(
        self, tenant_id: str, task_id: str, failures: Sequence[tuple[MemoryItem, ItemOutcome]], attempts: int
    ) -> None:
        if failures:
            self.added.append((task_id, list(failures)))


def _job(*contents: str, refresh: bool = False) -> IngestJob:
    items = [MemoryItem(memory_id=f"m{i}", content=c) for i, c in enumerate(contents)]
    return IngestJob(task_id="t1", tenant_id="acme", items=items, refresh=refresh)


def _pipeline(client: FakeClient) -> IngestPipeline:
    return IngestPipeline(client, FakeEmbedder(), S, sleep=lambda s: None, clock=lambda: 0.0, rng=lambda: 0.0)  # type: ignore[arg-type]


def test_wire_format_chunks_and_refresh() -> None:
    client = FakeClient([])
    out = _pipeline(client).run(_job("a", "b", "c", "d", refresh=True))
    assert sorted(out.indexed) == ["m0", "m1", "m2", "m3"]
    assert [len(lines) // 2 for lines, _ in client.requests] == [3, 1]  # bulk_max_docs = 3
    lines, params = client.requests[0]
    assert params == {"refresh": "wait_for"}
    assert lines[0] == {"index": {"_id": memory_doc_id("acme", "m0"), "routing": "acme"}}
    doc = lines[1]
    assert doc["content"] == "a" and doc["embedding"] == [1.0, 0.0, 0.0, 0.0] and doc["tenant_id"] == "acme"


def test_only_the_retriable_item_is_sent_again() -> None:
    client = FakeClient([{"m1": 429, "m2": 400}, {}])
    out = _pipeline(client).run(_job("a", "b", "c"))
    assert sorted(out.indexed) == ["m0", "m1"]
    assert [(i.memory_id, o.status) for i, o in out.permanent] == [("m2", 400)]
    resent = client.requests[1][0]
    assert [line["memory_id"] for line in resent[1::2]] == ["m1"]


def test_connection_errors_are_retried_then_pending_at_the_deadline() -> None:
    down = OSConnectionError("N/A", "connection refused", None)
    client = FakeClient([down, {}])
    out = _pipeline(client).run(_job("a", "b"))
    assert sorted(out.indexed) == ["m0", "m1"] and not out.pending

    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    client = FakeClient([down] * 100)
    p = IngestPipeline(client, FakeEmbedder(), S, sleep=sleep, clock=lambda: now[0], rng=lambda: 0.0)  # type: ignore[arg-type]
    out = p.run(_job("a", "b"))
    assert [i.memory_id for i, _ in out.pending] == ["m0", "m1"] and not out.indexed
    assert now[0] <= S.ingest_retry_deadline_s


def test_bad_vector_is_permanent_and_never_sent() -> None:
    client = FakeClient([])
    out = _pipeline(client).run(_job("a", "zero"))
    assert out.indexed == ["m0"]
    assert [(i.memory_id, o.error_type) for i, o in out.permanent] == [("m1", "bad_vector")]
    assert all(line.get("content") != "zero" for lines, _ in client.requests for line in lines)


def test_attempts_carry_progress_and_dead_letter_what_is_left() -> None:
    down = OSConnectionError("N/A", "connection refused", None)
    dl = FakeDeadLetters()
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    client = FakeClient([{"m1": 503, "m2": 400}] + [down] * 200)
    p = IngestPipeline(client, FakeEmbedder(), S, sleep=sleep, clock=lambda: now[0], rng=lambda: 0.0)  # type: ignore[arg-type]
    step = run_attempt(_job("a", "b", "c"), p, dl, S)  # type: ignore[arg-type]
    assert isinstance(step, RetryLater)
    assert [i.memory_id for i in step.job.items] == ["m1"] and step.job.attempt == 1
    assert step.job.progress.indexed == 1 and step.job.progress.failed == 1 and step.job.submitted == 3
    assert [i.memory_id for i, _ in dl.added[0][1]] == ["m2"]
    # the last attempt gives up: the pending item is dead-lettered with the reason
    final = run_attempt(step.job, p, dl, S)  # type: ignore[arg-type]
    assert isinstance(final, Done)
    r = final.result
    assert (r.submitted, r.indexed, r.failed, r.attempts) == (3, 1, 2, 2)
    assert {f.memory_id for f in r.failures} == {"m1", "m2"} and all(f.dead_lettered for f in r.failures)
    assert "gave up after 2 attempts" in dl.added[1][1][0][1].reason  # type: ignore[operator]


def test_a_job_past_its_time_budget_continues_in_a_next_attempt_that_is_not_a_retry() -> None:
    client = FakeClient([])
    ticks = iter([0.0, 0.0, 99.0, 99.0, 99.0, 99.0])  # the budget runs out before the third batch starts
    pipeline = IngestPipeline(
        client, FakeEmbedder(), S, sleep=lambda s: None, clock=lambda: next(ticks), rng=lambda: 0.0
    )  # type: ignore[arg-type]
    job = _job(*[f"memory {i}" for i in range(7)])
    step = run_attempt(job, pipeline, FakeDeadLetters(), S, deadline=10.0)  # type: ignore[arg-type]
    assert isinstance(step, RetryLater) and step.countdown_s == 0.0
    assert [it.memory_id for it in step.job.items] == ["m6"]
    assert step.job.attempt == 0 and step.job.progress.indexed == 6  # a continuation, not a retry
    last = run_attempt(step.job, _pipeline(client), FakeDeadLetters(), S)  # type: ignore[arg-type]
    assert isinstance(last, Done) and (last.result.indexed, last.result.failed) == (7, 0)


def test_a_version_conflict_is_superseded_not_failed() -> None:
    client = FakeClient([{"m1": 409}])
    original = client.bulk

    def bulk(body: bytes, params: dict[str, Any], index: str | None = None) -> dict[str, Any]:
        r = original(body, params, index)
        for item in r["items"]:
            if item["index"]["status"] == 409:
                item["index"]["error"] = {"type": "version_conflict_engine_exception", "reason": "newer"}
        return r

    client.bulk = bulk  # type: ignore[method-assign]
    job = _job("old write", "other").model_copy(update={"version": 5})
    step = run_attempt(job, _pipeline(client), FakeDeadLetters(), S)  # type: ignore[arg-type]
    assert isinstance(step, Done)
    assert (step.result.indexed, step.result.superseded, step.result.failed) == (1, 1, 0)
    action = client.requests[0][0][0]["index"]
    assert (action["version"], action["version_type"]) == (5, "external_gte")
