"""Prometheus metrics of an API process (the official ``prometheus_client``), on ``GET /metrics``.

- ``brain_http_request_duration_seconds{method,route,status}``: every request, by route template;
- ``brain_recall_stage_seconds{stage}``: intent, embed, search, rank and total of each recall
  (HTTP and MCP);
- ``brain_ingest_memories_total{event}``: memories this process accepted (``accepted``), and in
  embedded mode what its tasks did with them (``indexed``, ``failed``, ``superseded``);
- ``brain_ingest_task_memories{outcome}``: the same outcomes summed over every task record kept
  (all workers, all API replicas; ``task_ttl_s``), read at scrape time, cached ``CACHE_S``;
- ``brain_ingest_queue_depth``: tasks waiting in Redis (worker mode; NaN when Redis does not
  answer) and ``brain_ingest_outbox``: tasks this process holds for a Redis that did not take them;
- ``brain_engine_errors_total{kind}``: OpenSearch failures answered as 5xx;
- ``brain_version_clock_skew_seconds``: how far this process's clock runs ahead of the engine's,
  and ``brain_versions_clamped_total{direction}``: versions held within ``BRAIN_VERSION_MAX_SKEW_S``
  of it (``ahead``, ``behind``; ``ingest/versions.py``);
- ``brain_requests_refused_total{reason}``: requests refused before any route ran (no key, body
  too large, no length), and (once rate limits exist) rate-limit refusals;
- ``brain_feedback_rating``: ratings (1–5) this process took, a histogram (``_sum / _count``: the
  mean); ``brain_feedback_results_total{relevant}``: results marked relevant (``true``) or not;
  ``brain_feedback_recalls_recorded_total{outcome}``: recalls kept for feedback (``recorded``),
  not written (``failed``) or not kept (``dropped``);
- ``brain_feedback_stored_rating_mean`` and ``brain_feedback_stored_ratings``: the mean and count
  of every rating kept (all tenants, all replicas), read at scrape time, cached ``CACHE_S``.

A registry per ``Metrics`` (never the global one): nothing is created at import time, and two apps
in one process (tests) do not share counters.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from brain_search.models import Timings

HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
CACHE_S = 15.0


class _TaskOutcomes:
    """A collector: memory outcomes summed over the task records, at scrape time (cached)."""

    def __init__(self, read: Callable[[], dict[str, float]], cache_s: Callable[[], float]) -> None:
        self.read = read
        self.cache_s = cache_s
        self._cached: tuple[float, dict[str, float]] | None = None

    def collect(self) -> Any:
        at, values = self._cached or (0.0, {})
        if self._cached is None or time.monotonic() - at >= self.cache_s():
            try:
                values = self.read()
            except Exception:
                values = {k: math.nan for k in ("indexed", "failed", "superseded", "submitted")}
            self._cached = (time.monotonic(), values)
        family = GaugeMetricFamily(
            "brain_ingest_task_memories", "memories by outcome, over the task records kept", labels=["outcome"]
        )
        for outcome, value in sorted(values.items()):
            family.add_metric([outcome], value)
        yield family


class _StoredRatings:
    """A collector: the ratings kept in the feedback index, at scrape time (cached)."""

    def __init__(self, read: Callable[[], tuple[int, float]], cache_s: Callable[[], float]) -> None:
        self.read = read
        self.cache_s = cache_s
        self._cached: tuple[float, tuple[float, float]] | None = None

    def collect(self) -> Any:
        at, (count, mean) = self._cached or (0.0, (math.nan, math.nan))
        if self._cached is None or time.monotonic() - at >= self.cache_s():
            try:
                n, total = self.read()
                count, mean = float(n), (total / n if n else math.nan)
            except Exception:
                count, mean = math.nan, math.nan
            self._cached = (time.monotonic(), (count, mean))
        yield GaugeMetricFamily("brain_feedback_stored_ratings", "ratings kept, all tenants", value=count)
        yield GaugeMetricFamily("brain_feedback_stored_rating_mean", "mean of the ratings kept (1-5)", value=mean)


class _VersionClock:
    """A collector: the version clock's skew to the engine's and the versions it clamped
    (``ingest/versions.py``), read from the bound ingest service at scrape time."""

    def __init__(self, clock: Callable[[], Any]) -> None:
        self.clock = clock

    def collect(self) -> Any:
        versions = self.clock()
        if versions is None:
            return
        skew = versions.skew_s
        yield GaugeMetricFamily(
            "brain_version_clock_skew_seconds",
            "how far this process's clock runs ahead of the engine's (negative: behind), last measured",
            value=math.nan if skew is None else skew,
        )
        clamped = CounterMetricFamily(
            "brain_versions_clamped",
            "versions pulled back within BRAIN_VERSION_MAX_SKEW_S of the engine's clock",
            labels=["direction"],
        )
        for direction, n in sorted(versions.clamped.items()):
            clamped.add_metric([direction], n)
        yield clamped


class Metrics:
    def __init__(self, task_cache_s: float = CACHE_S) -> None:
        self.task_cache_s = task_cache_s  # how long the task-record sums are reused between scrapes
        self.registry = CollectorRegistry()
        r = self.registry
        self.http = Histogram(
            "brain_http_request_duration_seconds",
            "HTTP request latency by route template",
            ["method", "route", "status"],
            buckets=HTTP_BUCKETS,
            registry=r,
        )
        self.recall_stage = Histogram(
            "brain_recall_stage_seconds", "time of each recall stage", ["stage"], buckets=STAGE_BUCKETS, registry=r
        )
        self.recall_engine_requests = Counter(
            "brain_recall_engine_requests",
            "engine requests made by recalls (÷ recalls: 1 at best; more when the tenant's counts came first)",
            registry=r,
        )
        self.ingest = Counter(
            "brain_ingest_memories", "memories by ingest event in this process", ["event"], registry=r
        )
        self.engine_errors = Counter("brain_engine_errors", "OpenSearch failures answered as 5xx", ["kind"], registry=r)
        self.refused = Counter(
            "brain_requests_refused", "requests refused before any route ran", ["reason"], registry=r
        )
        self.queue_depth = Gauge("brain_ingest_queue_depth", "ingest tasks waiting in Redis", registry=r)
        self.outbox = Gauge("brain_ingest_outbox", "ingest tasks held for a Redis that did not take them", registry=r)
        self.feedback_rating = Histogram(
            "brain_feedback_rating", "recall ratings taken (1-5)", buckets=(1, 2, 3, 4, 5), registry=r
        )
        self.feedback_results = Counter(
            "brain_feedback_results", "results marked relevant or not", ["relevant"], registry=r
        )
        self.recalls_recorded = Counter(
            "brain_feedback_recalls_recorded", "recalls kept for feedback, by outcome", ["outcome"], registry=r
        )

    def bind(self, ingest: Any, feedback: Any = None) -> None:
        """Read the queue and the task records of ``ingest`` (an ``IngestService``) and the ratings
        kept by ``feedback`` (a ``FeedbackService``) at scrape time and count their events; a later
        bind (another state) replaces the earlier one."""
        first = getattr(self, "_ingest", None) is None
        self._ingest = ingest
        ingest.set_events(self.ingest_event)
        if feedback is not None:
            first_feedback = getattr(self, "_feedback", None) is None
            self._feedback = feedback
            feedback.recorder.set_events(self.recorded_event)
            if first_feedback:
                stored = _StoredRatings(lambda: self._feedback.store.stored_ratings(), lambda: self.task_cache_s)
                self.registry.register(stored)
        if first:
            self.queue_depth.set_function(lambda: float(self._ingest.queue.depth()))
            self.outbox.set_function(lambda: float(getattr(self._ingest.queue, "outbox_size", 0)))
            outcomes = _TaskOutcomes(lambda: self._ingest.queue.outcome_sums(), lambda: self.task_cache_s)
            self.registry.register(outcomes)
            self.registry.register(_VersionClock(lambda: getattr(self._ingest, "versions", None)))

    def observe_recall(self, timings: Timings) -> None:
        for stage in ("intent", "embed", "plan", "search", "rank", "tiers", "context", "total"):
            self.recall_stage.labels(stage).observe(getattr(timings, f"{stage}_ms") / 1000.0)
        self.recall_engine_requests.inc(timings.engine_requests)

    def observe_feedback(self, rating: int | None, marks: list[bool]) -> None:
        if rating is not None:
            self.feedback_rating.observe(rating)
        for relevant in marks:
            self.feedback_results.labels("true" if relevant else "false").inc()

    def recorded_event(self, outcome: str, n: int = 1) -> None:
        if n:
            self.recalls_recorded.labels(outcome).inc(n)

    def ingest_event(self, event: str, n: int = 1) -> None:
        if n:
            self.ingest.labels(event).inc(n)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class HttpMetrics:
    """Pure ASGI middleware: the latency of every HTTP request, labelled by the matched route's
    template (``/v1/memories/{memory_id:path}``, never the raw path: bounded cardinality)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 500}

        async def send_wrapper(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            brain = getattr(getattr(scope.get("app"), "state", None), "brain", None)
            if brain is not None:
                route = scope.get("route")
                template = getattr(route, "path", None) or (
                    "/mcp" if str(scope.get("path", "")).startswith("/mcp") else "unmatched"
                )
                brain.metrics.http.labels(scope.get("method", ""), template, str(status["code"])).observe(
                    time.perf_counter() - start
                )
