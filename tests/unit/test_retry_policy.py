"""The ingest retry policy: 429, 5xx and connection errors are retried with backoff; every other
failure (400, 401, 403, 404, 409, not the engine's) is not, and ends as a dead letter that records
its status, type and reason (issue 42.3)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from opensearchpy.exceptions import (
    AuthenticationException,
    AuthorizationException,
    ConflictError,
    ConnectionTimeout,
    NotFoundError,
    RequestError,
    TransportError,
)
from opensearchpy.exceptions import ConnectionError as OSConnectionError

from brain_search.config import load_settings
from brain_search.errors import StoreUnavailable
from brain_search.ingest.attempt import AttemptOutcome
from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.execute import RetryLater, end_failures, retry_after_error
from brain_search.ingest.inprocess import InProcessQueue
from brain_search.ingest.models import IngestJob, MemoryItem, TaskState
from brain_search.ingest.retry_policy import backoff_delay, classify, is_transient_status, transient

S = load_settings(ingest_task_max_retries=8, ingest_task_retry_base_s=0.001, ingest_task_retry_cap_s=0.001)
GATEWAY_403 = "<html><head><title>403 Forbidden</title></head><body>nginx</body></html>"


def _engine(cls: type[TransportError], status: int, error_type: str, reason: str = "refused") -> TransportError:
    """An error as opensearch-py raises it for a JSON answer: the type, and the body as ``info``."""
    return cls(status, error_type, {"error": {"type": error_type, "reason": reason}, "status": status})


def _job(n: int = 2) -> IngestJob:
    items = [MemoryItem(memory_id=f"m{i}", content=f"memory {i}") for i in range(n)]
    return IngestJob(task_id="t1", tenant_id="acme", items=items)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 599])
def test_429_and_5xx_are_transient(status: int) -> None:
    assert is_transient_status(status)
    v = classify(
        TransportError(status, "busy", {"error": {"type": "es_rejected_execution_exception", "reason": "full"}})
    )
    assert v.retriable and v.status == status and v.error_type == "es_rejected_execution_exception"


@pytest.mark.parametrize(
    "exc",
    [
        OSConnectionError("N/A", "connection refused", None),
        ConnectionTimeout("TIMEOUT", "read timed out", None),
        ConnectionResetError("reset by peer"),
        TimeoutError("timed out"),
    ],
)
def test_no_answer_is_transient(exc: Exception) -> None:
    v = classify(exc)
    assert v.retriable and v.status is None and v.reason


@pytest.mark.parametrize(
    ("exc", "status", "error_type"),
    [
        (_engine(RequestError, 400, "mapper_parsing_exception"), 400, "mapper_parsing_exception"),
        (_engine(AuthenticationException, 401, "security_exception"), 401, "security_exception"),
        (_engine(AuthorizationException, 403, "cluster_block_exception"), 403, "cluster_block_exception"),
        (TransportError(403, GATEWAY_403, None), 403, "TransportError"),  # a gateway's HTML page
        (_engine(NotFoundError, 404, "index_not_found_exception"), 404, "index_not_found_exception"),
        (_engine(ConflictError, 409, "version_conflict_engine_exception"), 409, "version_conflict_engine_exception"),
        (TransportError(418, "teapot", None), 418, "TransportError"),
    ],
)
def test_every_other_answer_is_permanent_and_keeps_its_reason(exc: Exception, status: int, error_type: str) -> None:
    v = classify(exc)
    assert not v.retriable and not transient(exc)
    assert (v.status, v.error_type) == (status, error_type) and v.reason


def test_not_the_engines_errors_are_permanent() -> None:
    assert not transient(ValueError("a bug"))
    assert not transient(KeyError("a bug"))


def test_store_unavailable_is_judged_by_the_answer_it_came_from() -> None:
    def raised_from(cause: Exception | None) -> StoreUnavailable:
        try:
            if cause is None:
                raise StoreUnavailable("the store did not answer")
            raise StoreUnavailable("1 dead letters were not stored") from cause
        except StoreUnavailable as exc:
            return exc

    refused = classify(raised_from(AuthorizationException(403, "cluster_block_exception", {})))
    assert not refused.retriable and refused.status == 403 and "not stored" in refused.reason
    assert transient(raised_from(TransportError(503, "unavailable_shards_exception", {})))
    assert transient(raised_from(OSConnectionError("N/A", "refused", None)))
    assert transient(raised_from(None))


def test_backoff_is_capped_exponential_with_jitter() -> None:
    assert backoff_delay(0, 0.5, 8, 0.0) == 0.25
    assert backoff_delay(0, 0.5, 8, 0.999) == pytest.approx(0.5, abs=0.01)
    assert backoff_delay(3, 0.5, 8, 0.0) == 2.0
    assert backoff_delay(10, 0.5, 8, 0.999) <= 8
    assert backoff_delay(1000, 0.5, 8, 0.5) <= 8  # no overflow


def test_a_task_retries_only_a_transient_failure() -> None:
    job = _job()
    gateway = TransportError(403, GATEWAY_403, None)
    assert retry_after_error(job, gateway, S) is None  # was: retried 8 times
    assert retry_after_error(job, AuthorizationException(403, "security_exception", {}), S) is None
    assert retry_after_error(job, RequestError(400, "x", {}), S) is None
    busy = retry_after_error(job, TransportError(503, "busy", {}), S)
    assert isinstance(busy, RetryLater) and busy.job.attempt == 1
    assert isinstance(retry_after_error(job, OSConnectionError("N/A", "refused", None), S), RetryLater)
    spent = job.model_copy(update={"attempt": S.ingest_task_max_retries})
    assert retry_after_error(spent, TransportError(503, "busy", {}), S) is None


def test_end_failures_record_the_status_and_reason() -> None:
    refused = end_failures(
        _job(), "AuthorizationException(403)", _engine(AuthorizationException, 403, "security_exception")
    )
    assert [(o.memory_id, o.status, o.error_type, o.retriable) for _, o in refused] == [
        ("m0", 403, "security_exception", False),
        ("m1", 403, "security_exception", False),
    ]
    assert refused[0][1].reason == "not retried (403): AuthorizationException(403)"
    spent = end_failures(_job().model_copy(update={"attempt": 1}), "down", OSConnectionError("N/A", "refused", None))
    assert spent[0][1].reason == "gave up after 2 attempts: down" and spent[0][1].status is None


class _RefusingEngine:
    """The dead-letters index answers every bulk item 403 (an index write block, as a gateway's
    refusal would)."""

    def __init__(self) -> None:
        self.bulks = 0

    def bulk(self, body: bytes, index: str, params: dict[str, Any]) -> dict[str, Any]:
        self.bulks += 1
        error = {
            "type": "cluster_block_exception",
            "reason": "index [dead-letters] blocked by: [FORBIDDEN/8/index write (api)];",
        }
        n = len(body.splitlines()) // 2
        return {"errors": True, "items": [{"index": {"status": 403, "error": error}}] * n}


class _PermanentFailures:
    """A pipeline whose every item fails permanently (a mapping refusal): they must be dead-lettered."""

    def __init__(self) -> None:
        self.runs = 0

    def run(self, job: IngestJob, deadline: float | None = None, **_: object) -> AttemptOutcome:
        self.runs += 1
        bad = [
            (it, ItemOutcome(it.memory_id, False, False, 400, "mapper_parsing_exception", "bad")) for it in job.items
        ]
        return AttemptOutcome(permanent=bad)


def test_a_403_while_dead_lettering_ends_the_task_at_once() -> None:
    """The issue's case in embedded mode: one attempt, not nine; the task's error names the 403."""
    engine, pipeline = _RefusingEngine(), _PermanentFailures()
    queue = InProcessQueue(pipeline, DeadLetterStore(engine, S), S)  # type: ignore[arg-type]
    queue.submit(_job())
    deadline = time.monotonic() + 30
    while (status := queue.status("acme", "t1")).state not in (TaskState.succeeded, TaskState.failed):
        assert time.monotonic() < deadline, status
        time.sleep(0.01)
    queue.close()
    assert pipeline.runs == 1, f"{pipeline.runs} attempts"
    assert status.state is TaskState.failed and "403 cluster_block_exception" in (status.error or ""), status
    assert (status.submitted, status.indexed, status.failed) == (2, 0, 2)
    assert engine.bulks == 2  # the attempt's dead letters, then the give-up's: both refused, neither retried
    assert not any(f.dead_lettered for f in status.failures)
