"""The types every door shares (``client/brain_search_client/models/inputs.py``) and the reconciler's handling of
a job that cannot be sent (issue 54 items 1 and 6; pure)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from brain_search_client.models.inputs import engine_time, json_depth, json_problem, lone_surrogate, printable
from pydantic import ValidationError

from brain_search.api.errors import validation_body
from brain_search.ingest.forget import ForgetRequest
from brain_search.ingest.models import IngestJob, IngestRequest, MemoryItem, MemoryPatch, MemoryReplace
from brain_search.ingest.reconcile import reconcile
from brain_search.models import RecallRequest


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels - 1):
        node["a"] = {}
        node = node["a"]
    return root


def _locs(model: Any, body: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(body)
    return [tuple(e["loc"]) for e in exc.value.errors()]


def test_lone_surrogates_are_found_and_written_out() -> None:
    assert lone_surrogate("plain") is None and lone_surrogate("naïve 😀") is None
    assert lone_surrogate("ab\ud800c") == 2 and lone_surrogate("\udcff") == 0
    assert printable("a\ud800") == "a\\ud800" and printable("ok") == "ok"
    assert json_problem({"k": ["x", {"y": "\ud800"}]}) == ("k[1].y", json_problem("\ud800")[1])  # type: ignore[index]
    assert json_problem({"k\udc00": 1})[0] == "k\\udc00"  # type: ignore[index]
    assert json_problem({"a": [1, "two", None, 3.5]}) is None


def test_depth_is_measured_without_recursion() -> None:
    assert json_depth(1) == 0 and json_depth({}) == 1 and json_depth({"a": [1, {"b": 2}]}) == 3
    assert json_depth(_deep(5000)) == 5000
    assert json_problem(_deep(32)) is None
    _, reason = json_problem(_deep(450))  # type: ignore[misc]
    assert reason == "nested more than 32 levels deep"


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        "2026-01-01T00:00:00+23:00",
        "2026-01-01T00:00:00-18:30",
    ],
)
def test_times_the_engine_cannot_take_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        engine_time(datetime.fromisoformat(text))


def test_every_edge_model_names_the_field() -> None:
    bad_time = "0001-01-01T00:00:00+01:00"
    assert _locs(IngestRequest, {"content": "a\ud800"}) == [("memories", 0, "content")]
    assert _locs(IngestRequest, {"content": "x", "timestamp": "2026-01-01T00:00:00+23:00"}) == [
        ("memories", 0, "timestamp")
    ]
    assert _locs(IngestRequest, {"content": "x", "metadata": _deep(450)}) == [("memories", 0, "metadata")]
    assert _locs(MemoryReplace, {"content": "x", "valid_until": bad_time}) == [("valid_until",)]
    assert _locs(MemoryPatch, {"metadata": {"k": "\ud800"}}) == [("metadata",)]
    assert _locs(ForgetRequest, {"since": bad_time}) == [("since",)]
    assert _locs(RecallRequest, {"query": "q", "until": "9999-12-31T23:59:59-01:00"}) == [("until",)]


def test_a_422_echoes_neither_a_surrogate_nor_a_deep_input_raw() -> None:
    for body in ({"content": "a\ud800"}, {"content": "x", "metadata": _deep(450)}):
        with pytest.raises(ValidationError) as exc:
            IngestRequest.model_validate(body)
        out = json.dumps(validation_body(exc.value.errors()), ensure_ascii=False).encode("utf-8")  # as the API sends it
        assert b"memories" in out


def test_the_reconciler_gives_up_a_job_it_cannot_send_and_queues_the_others() -> None:
    def payload(task_id: str, content: str) -> dict[str, Any]:
        job = IngestJob(task_id=task_id, tenant_id="acme", items=[MemoryItem(memory_id="m", content=content)])
        return job.model_dump(mode="json")

    candidates = [("bad", payload("bad", "x\ud800")), ("junk", {"not": "a job"}), ("good", payload("good", "ok"))]
    sent: list[str] = []
    given_up: list[str] = []
    n = reconcile(lambda: candidates, set, lambda job: sent.append(job.task_id), lambda t, why: given_up.append(t))
    assert n == 1 and sent == ["good"] and given_up == ["bad", "junk"]
