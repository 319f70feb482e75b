"""Fair ingest (``ingest/lanes.py``), pure: a job's lane, the slice one message runs, each tenant's
fast-lane allowance, embedded mode's scheduler order, and a sliced job's continuations."""

from __future__ import annotations

import threading

from brain_search.config import load_settings
from brain_search.ingest.broker import bulk_queue, celery_config, ingest_queue, lane_queues, queue_keys
from brain_search.ingest.execute import Done, RetryLater, run_attempt
from brain_search.ingest.lanes import Lane, LanePicker, LaneScheduler, lane_for, lane_of, should_yield, slice_size
from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.ingest.pipeline import IngestPipeline
from tests.unit.test_ingest_pipeline import FakeClient, FakeDeadLetters, FakeEmbedder
from tests.unit.test_ingest_pipeline import S as PIPELINE_SETTINGS

LANES = {"ingest_fast_lane_max": 4, "ingest_fast_lane_per_s": 10, "ingest_slice_memories": 8}
S = load_settings(**LANES)
P = PIPELINE_SETTINGS.model_copy(update={**LANES, "bulk_max_docs": 500})  # the fake engine's settings


def _pipeline(client: FakeClient) -> IngestPipeline:
    return IngestPipeline(client, FakeEmbedder(), P, sleep=lambda s: None, clock=lambda: 0.0, rng=lambda: 0.0)  # type: ignore[arg-type]


def _items(n: int, chars: int = 20) -> list[MemoryItem]:
    return [MemoryItem(memory_id=f"m{i}", content="x" * chars) for i in range(n)]


def _job(tenant: str, n: int, chars: int = 20) -> IngestJob:
    return IngestJob(task_id=f"{tenant}-{n}", tenant_id=tenant, items=_items(n, chars))


def test_a_slice_is_at_most_the_setting_and_fewer_when_the_memories_are_long() -> None:
    assert slice_size(_items(3), S) == 3
    assert slice_size(_items(100), S) == 8
    # 8 short memories' worth of text (8 × 200 characters): long memories take more room each
    assert slice_size(_items(100, chars=400), S) == 4
    # a memory counts at most ingest_chunk_chars (what the model reads of it), and a slice is never empty
    assert slice_size(_items(100, chars=8000), S) == 1
    assert slice_size(_items(1, chars=8000), S) == 1
    assert slice_size([], S) == 0


def test_a_small_job_goes_to_the_fast_lane_while_its_tenant_has_allowance() -> None:
    assert lane_for(1, 0, S) is Lane.fast
    assert lane_for(4, 6, S) is Lane.fast  # 10 this second: the allowance, not past it
    assert lane_for(4, 7, S) is Lane.bulk
    assert lane_for(5, 0, S) is Lane.bulk  # larger than ingest_fast_lane_max
    assert lane_of(_job("a", 5), S) is Lane.bulk and lane_of(_job("a", 1), S) is Lane.fast
    assert lane_for(1, 0, S.model_copy(update={"ingest_fast_lane_max": 0})) is Lane.bulk


def test_a_tenant_past_its_fast_lane_allowance_waits_in_the_bulk_lane_for_the_rest_of_the_second() -> None:
    now = [0.0]
    picker = LanePicker(S, clock=lambda: now[0])
    lanes = [picker.pick(_job("flood", 1)) for _ in range(12)]
    assert lanes == [Lane.fast] * 10 + [Lane.bulk] * 2
    assert picker.pick(_job("quiet", 1)) is Lane.fast  # another tenant's allowance is its own
    assert picker.pick(_job("quiet", 9)) is Lane.bulk
    now[0] = 1.0
    assert picker.pick(_job("flood", 1)) is Lane.fast  # a new second
    # what it holds: the tenants of the current second only
    assert len(picker) == 1
    for i in range(1000):
        picker.pick(_job(f"t{i}", 1))
    now[0] = 2.5
    picker.pick(_job("late", 1))
    assert len(picker) == 1


def test_the_scheduler_takes_the_fast_lane_first_and_a_delayed_entry_when_due() -> None:
    now = [0.0]
    lanes: LaneScheduler[str] = LaneScheduler(clock=lambda: now[0])
    lanes.put("bulk-1", Lane.bulk)
    lanes.put("bulk-2", Lane.bulk)
    lanes.put("retry", Lane.fast, delay_s=5.0)
    lanes.put("fast-1", Lane.fast)
    assert lanes.take(0) == "fast-1"
    assert lanes.take(0) == "bulk-1"
    now[0] = 5.0
    assert lanes.take(0) == "retry"  # due: fast lane, ahead of the bulk lane
    assert lanes.take(0) == "bulk-2"
    assert lanes.take(0) is None and lanes.waiting() == 0


def test_the_scheduler_wakes_a_waiting_thread_and_close_releases_it() -> None:
    lanes: LaneScheduler[str] = LaneScheduler()
    got: list[str | None] = []
    first = threading.Event()

    def serve() -> None:
        got.append(lanes.take())
        first.set()
        got.append(lanes.take())  # waits until closed

    t = threading.Thread(target=serve)
    t.start()
    lanes.put("one", Lane.bulk)
    assert first.wait(5)
    lanes.close()
    t.join(5)
    assert not t.is_alive() and got == ["one", None]


def test_a_job_yields_between_slices_only_when_another_waits() -> None:
    assert should_yield(1, 0, 0.0, S)  # a job in the fast lane: at once
    assert not should_yield(0, 3, 1.0, S)  # the bulk lane: after this job's turn
    assert should_yield(0, 3, S.ingest_turn_s, S)
    assert not should_yield(0, 0, 3600.0, S)  # nobody waits: it runs on


def test_a_job_that_yields_continues_in_a_next_attempt_with_its_progress() -> None:
    client = FakeClient([])
    job = IngestJob(task_id="t1", tenant_id="acme", items=_items(20), version=7)
    asked = iter([False, True])  # before the second slice, before the third
    step = run_attempt(job, _pipeline(client), FakeDeadLetters(), P, yield_now=lambda: next(asked))  # type: ignore[arg-type]
    assert isinstance(step, RetryLater) and step.continues and step.countdown_s == 0.0
    assert step.job.attempt == 0 and step.job.version == 7 and step.job.submitted == 20
    assert step.job.progress.indexed == 16 and [it.memory_id for it in step.job.items] == [
        f"m{i}" for i in range(16, 20)
    ]
    assert "yielding to a waiting job" in step.reason
    last = run_attempt(step.job, _pipeline(client), FakeDeadLetters(), P, yield_now=lambda: True)  # type: ignore[arg-type]
    assert isinstance(last, Done) and (last.result.indexed, last.result.failed) == (20, 0)
    # written in slices (one bulk request each), every memory once
    assert [len(lines) // 2 for lines, _ in client.requests] == [8, 8, 4]
    sent = [line["memory_id"] for lines, _ in client.requests for line in lines[1::2]]
    assert sorted(sent) == sorted(f"m{i}" for i in range(20))


def test_a_window_is_embedded_shortest_first_and_what_is_left_is_exactly_the_rest() -> None:
    client = FakeClient([])
    items = [MemoryItem(memory_id=f"m{i}", content="x" * (1 + (i * 37) % 150)) for i in range(30)]
    job = IngestJob(task_id="t1", tenant_id="acme", items=items)
    step = run_attempt(job, _pipeline(client), FakeDeadLetters(), P, yield_now=lambda: True)  # type: ignore[arg-type]
    assert isinstance(step, RetryLater) and step.continues
    sent = [line["memory_id"] for lines, _ in client.requests for line in lines[1::2]]
    shortest = sorted(items, key=lambda it: len(it.content))[: len(sent)]
    assert sent == [it.memory_id for it in shortest]  # one slice, of the shortest memories
    assert sorted([*sent, *(it.memory_id for it in step.job.items)]) == sorted(it.memory_id for it in items)


def test_a_job_nobody_waits_behind_runs_whole_in_one_attempt() -> None:
    client = FakeClient([])
    job = IngestJob(task_id="t1", tenant_id="acme", items=_items(20))
    step = run_attempt(job, _pipeline(client), FakeDeadLetters(), P, yield_now=lambda: False)  # type: ignore[arg-type]
    assert isinstance(step, Done) and step.result.indexed == 20


def test_the_lane_watch_answers_nobody_waits_while_redis_does_not_answer() -> None:
    import redis

    from workers.lane_watch import LaneWatch

    class Down:
        calls = 0

        def pipeline(self, transaction: bool) -> Down:
            Down.calls += 1
            raise redis.ConnectionError("refused")

    now = [0.0]
    watch = LaneWatch(S.model_copy(update={"redis_url": "redis://127.0.0.1:1/0"}), clock=lambda: now[0])
    watch._redis = Down()
    assert watch.waiting() == (0, 0) and not watch.yield_now(0.0)()
    assert Down.calls == 1  # the breaker: not asked again for BREAKER_S
    now[0] = LaneWatch.BREAKER_S + 1
    assert watch.waiting() == (0, 0) and Down.calls == 2


def test_workers_take_the_fast_lane_first() -> None:
    s = load_settings(redis_url="redis://127.0.0.1:6399/0", index_prefix="t1")
    assert lane_queues(s) == [ingest_queue(s), bulk_queue(s)] == ["t1-ingest", "t1-ingest-bulk"]
    assert queue_keys(s) == ["t1:t1-ingest", "t1:t1-ingest-bulk"]
    assert celery_config(s)["broker_transport_options"]["queue_order_strategy"] == "priority"
