"""Pure parts of ingestion: chunking, bulk builders and outcomes, backoff, limits, Celery config."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import TransportError

from brain_search.config import load_settings
from brain_search.errors import SetupError
from brain_search.ingest.attempt import vector_problem
from brain_search.ingest.bulk import (
    BulkEntry,
    bulk_body,
    chunk_entries,
    encode_entry,
    index_action,
    outcomes_for_exception,
    parse_bulk_response,
)
from brain_search.ingest.chunking import chunk_text
from brain_search.ingest.models import IngestRequest
from brain_search.ingest.prepare import json_depth
from brain_search.ingest.retry_policy import backoff_delay


def test_chunk_text_short_is_one_piece() -> None:
    assert chunk_text("  hello world  ", 100, 20) == ["hello world"]
    assert chunk_text("   ", 100, 20) == []


def test_chunk_text_covers_everything_with_overlap_at_word_starts() -> None:
    words = [f"w{i:04d}" for i in range(2000)]
    text = " ".join(words)
    pieces = chunk_text(text, 500, 100)
    assert all(len(p) <= 500 for p in pieces)
    seen = [w for p in pieces for w in p.split()]
    assert set(seen) == set(words)  # nothing lost, and no word cut in half
    for a, b in itertools.pairwise(pieces):
        assert b.split()[0] in a.split()  # each piece starts inside the previous one
        assert 40 <= len(a) - a.index(b.split()[0]) <= 110


def test_chunk_text_prefers_sentence_ends() -> None:
    sentence = "This is a sentence of moderate length that ends here. "
    pieces = chunk_text(sentence * 40, 300, 60)
    assert all(p.endswith(".") for p in pieces[:-1])


def test_chunk_text_cuts_a_word_longer_than_a_piece() -> None:
    pieces = chunk_text("x" * 1000, 300, 50)
    assert all(len(p) <= 300 for p in pieces) and "".join(pieces).count("x") >= 1000
    with pytest.raises(ValueError):
        chunk_text("abc", 10, 10)


def _entry(mid: str, size: int) -> BulkEntry:
    return BulkEntry(mid, b"x" * size)


def test_chunk_entries_by_count_and_bytes() -> None:
    entries = [_entry(str(i), 10) for i in range(7)]
    assert [len(c) for c in chunk_entries(entries, 3, 10_000)] == [3, 3, 1]
    assert [len(c) for c in chunk_entries(entries, 100, 25)] == [2, 2, 2, 1]
    big = [_entry("a", 5), _entry("b", 50), _entry("c", 5)]
    assert [[e.memory_id for e in c] for c in chunk_entries(big, 100, 20)] == [["a"], ["b"], ["c"]]


def test_bulk_wire_format() -> None:
    action = index_action("abc", "acme")
    vec = np.array([0.5, -0.25], dtype=np.float32)
    e = encode_entry("m1", action, {"content": "hi", "embedding": vec})
    lines = bulk_body([e, e]).decode().split("\n")
    assert lines[-1] == "" and len(lines) == 5
    assert json.loads(lines[0]) == {"index": {"_id": "abc", "routing": "acme"}}
    assert json.loads(lines[1]) == {"content": "hi", "embedding": [0.5, -0.25]}


def test_parse_bulk_response_classifies_items() -> None:
    entries = [_entry(m, 1) for m in ("ok", "busy", "bad", "down")]
    response = {
        "errors": True,
        "items": [
            {"index": {"status": 201}},
            {"index": {"status": 429, "error": {"type": "es_rejected_execution_exception", "reason": "queue full"}}},
            {
                "index": {
                    "status": 400,
                    "error": {
                        "type": "mapper_parsing_exception",
                        "reason": "failed to parse field [timestamp]",
                        "caused_by": {"type": "x", "reason": "bad date"},
                    },
                }
            },
            {"index": {"status": 503, "error": {"type": "unavailable_shards_exception", "reason": "primary down"}}},
        ],
    }
    out = {o.memory_id: o for o in parse_bulk_response(response, entries)}
    assert out["ok"].ok and not out["ok"].retriable
    assert not out["busy"].ok and out["busy"].retriable and out["busy"].status == 429
    assert not out["bad"].retriable and out["bad"].error_type == "mapper_parsing_exception"
    assert out["bad"].reason == "failed to parse field [timestamp]: bad date"
    assert out["down"].retriable
    with pytest.raises(ValueError):
        parse_bulk_response({"items": []}, entries)


def test_request_failures() -> None:
    entries = [_entry("a", 1), _entry("b", 1)]
    assert all(o.retriable for o in outcomes_for_exception(entries, OSConnectionError("N/A", "refused", None)))
    assert all(o.retriable for o in outcomes_for_exception(entries, TransportError(502, "bad gateway", {})))
    bad = outcomes_for_exception(entries, TransportError(400, "parse", {"error": {"type": "x", "reason": "no"}}))
    assert not any(o.retriable for o in bad) and bad[0].reason == "no"


def test_backoff_is_capped_exponential_with_jitter() -> None:
    assert backoff_delay(0, 0.5, 8, 0.0) == 0.25
    assert backoff_delay(0, 0.5, 8, 0.999) == pytest.approx(0.5, abs=0.01)
    assert backoff_delay(3, 0.5, 8, 0.0) == 2.0
    assert backoff_delay(10, 0.5, 8, 0.999) <= 8
    assert backoff_delay(1000, 0.5, 8, 0.5) <= 8  # no overflow


def test_vector_problem() -> None:
    assert vector_problem(np.ones(4, np.float32), 4) is None
    assert "shape" in (vector_problem(np.ones(3, np.float32), 4) or "")
    assert "NaN" in (vector_problem(np.array([1, np.nan, 0, 0], np.float32), 4) or "")
    assert "zeros" in (vector_problem(np.zeros(4, np.float32), 4) or "")


def test_json_depth() -> None:
    assert json_depth(1) == 0
    assert json_depth({}) == 1
    assert json_depth({"a": [1, {"b": 2}]}) == 3


def test_single_memory_form_becomes_a_batch() -> None:
    req = IngestRequest.model_validate({"content": "hi", "memory_id": "m1", "refresh": True})
    assert req.refresh and len(req.memories) == 1 and req.memories[0].memory_id == "m1"
    req = IngestRequest.model_validate({"memories": [{"content": "a"}, {"content": "b"}], "chunk": True})
    assert req.chunk and len(req.memories) == 2


def test_celery_config() -> None:
    from brain_search.ingest.broker import celery_config, ingest_queue

    s = load_settings(redis_url="redis://127.0.0.1:6399/0", index_prefix="t1")
    conf = celery_config(s)
    assert conf["worker_proc_alive_timeout"] >= 60  # a child that loads the model is not killed as hung
    assert conf["task_acks_late"] and conf["task_reject_on_worker_lost"]
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["task_default_queue"] == ingest_queue(s) == "t1-ingest"
    vt = conf["broker_transport_options"]["visibility_timeout"]
    assert vt > conf["task_time_limit"] + s.ingest_task_retry_cap_s
    with pytest.raises(SetupError, match="VISIBILITY"):
        celery_config(s.model_copy(update={"celery_visibility_timeout_s": 60}))


def test_worker_mode_without_a_redis_url_is_an_error_not_a_silent_switch() -> None:
    from brain_search.config import load_settings
    from brain_search.errors import SetupError
    from brain_search.ingest.modes import make_ingest_service

    s = load_settings(ingest_mode="workers", redis_url=None)
    with pytest.raises(SetupError, match="BRAIN_REDIS_URL"):
        make_ingest_service(s, None, None)  # type: ignore[arg-type]


def test_document_sessions_one_per_usable_cpu_at_most_four() -> None:
    from brain_search.encoders.factory import document_sessions, usable_cpus

    s = load_settings()
    assert s.embedding_sessions == 0
    assert [document_sessions(s, cpus) for cpus in (1, 2, 3, 4, 16)] == [1, 2, 3, 4, 4]
    assert document_sessions(s.model_copy(update={"embedding_sessions": 6}), 2) == 6  # set: taken as is
    assert 1 <= document_sessions(s) <= 4 and usable_cpus() >= 1
    with pytest.raises(ValueError):
        load_settings(embedding_sessions=-1)


def test_worker_embedder_with_one_cpu_runs_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker allowed one CPU gets one one-thread session, not onnxruntime's default pool (one
    spinning thread per core of the machine, pinned by onnxruntime whatever the affinity)."""
    from brain_search.encoders import factory

    made: list[tuple[int, int]] = []

    def fake(settings: object, intra_op_threads: int = 0, sessions: int = 1) -> object:
        made.append((intra_op_threads, sessions))
        return object()

    monkeypatch.setattr(factory, "make_document_embedder", fake)
    monkeypatch.setattr(factory, "usable_cpus", lambda: 1)
    factory.make_worker_embedder(load_settings())
    monkeypatch.setattr(factory, "usable_cpus", lambda: 3)
    factory.make_worker_embedder(load_settings())
    assert made == [(1, 1), (1, 3)]
