"""Locust users for brain-search. Normally driven by ``brain-search bench load`` (headless), which
writes the workload file and sets the environment; usable by hand too:

    BRAIN_LOAD_WORKLOAD=out/load/workload.json locust -f loadtests/locustfile.py RecallUser \
        --host http://127.0.0.1:8080 --headless -u 16 -r 16 -t 60s

- ``RecallUser``: the service. Replays the workload: ``POST /v1/recall`` with the tenant's API key,
  and ``POST /v1/memories`` for write items. Requests are named by kind (``recall:auto`` ...).
- ``EngineUser``: the bare engine. Sends each recall's own ``_msearch`` (BM25 + kNN sub-searches,
  exactly as the pipeline builds them) straight to OpenSearch (``--host`` = its URL).

Environment: ``BRAIN_LOAD_WORKLOAD`` (the JSON file, required), ``BRAIN_LOAD_RATE`` (requests/s
per user, Poisson arrivals; 0 or unset = closed loop, no wait), ``BRAIN_LOAD_AUTH`` (``user:pass``
for a secured OpenSearch, EngineUser only), ``BRAIN_LOAD_SAMPLES`` (a CSV path: every request's
end time, name, latency in ms and success, written when the test stops; Locust's own CSV rounds
latencies and its history is a 10 s sliding window, the runner computes exact figures from this),
``BRAIN_LOAD_ENGINE_REQUESTS`` (a JSON path: how many recalls made 1, 2, … engine requests, from
each answer's ``timings.engine_requests``, written when the test stops).
"""

from __future__ import annotations

import base64
import csv
import itertools
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from locust import FastHttpUser, constant, events, task

_WORKLOAD: dict[str, Any] | None = None
_CURSORS: dict[str, Iterator[int]] = {}  # user class → its shared position in the workload
_SAMPLES: list[tuple[float, str, float, int]] = []
_ENGINE_REQUESTS: Counter[int] = Counter()  # engine requests per recall → recalls


@events.request.add_listener
def _record(name: str, response_time: float, exception: BaseException | None, **_: Any) -> None:
    _SAMPLES.append((time.time(), name, response_time, 0 if exception else 1))


@events.test_stop.add_listener
def _write_samples(**_: Any) -> None:
    path = os.environ.get("BRAIN_LOAD_SAMPLES")
    if not path:
        return
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", "name", "ms", "ok"])
        w.writerows(_SAMPLES)
    counts = os.environ.get("BRAIN_LOAD_ENGINE_REQUESTS")
    if counts and _ENGINE_REQUESTS:
        with open(counts, "w") as fh:
            json.dump({str(k): v for k, v in sorted(_ENGINE_REQUESTS.items())}, fh)


def workload() -> dict[str, Any]:
    global _WORKLOAD
    if _WORKLOAD is None:
        with open(os.environ["BRAIN_LOAD_WORKLOAD"]) as fh:
            _WORKLOAD = json.load(fh)
    return _WORKLOAD


def _rate() -> float:
    return float(os.environ.get("BRAIN_LOAD_RATE") or 0)


def _poisson(user: Any) -> float:
    """Seconds until this user's next request: arrivals form a Poisson process at BRAIN_LOAD_RATE
    per user (so the users together make one at the total rate), scheduled from the previous
    arrival, not from the end of the previous response.

    Why not Locust's constant_throughput: users spawned together stay in lockstep and fire in
    bursts (32 users at 10 req/s = 32 requests at once every 3.2 s), which measured p50 282 ms at
    25 req/s but 136 ms at 100 req/s: the bursts, not the rate, set the latency."""
    now = time.monotonic()
    user.next_at = max(getattr(user, "next_at", now), now - 1.0) + random.expovariate(_rate())
    return max(0.0, user.next_at - now)


def _wait_time() -> Callable[[Any], float]:
    return _poisson if _rate() > 0 else constant(0)


class _Replay(FastHttpUser):
    abstract = True
    wait_time = _wait_time()
    network_timeout = 30.0
    connection_timeout = 10.0

    def on_start(self) -> None:
        self.items = self.pick(workload()["items"])
        if _rate() > 0:  # a random first arrival too, so users spawned together do not fire together
            time.sleep(_poisson(self))

    def pick(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return items

    def next_item(self) -> dict[str, Any]:
        """The next item of ONE cursor shared by every user of this class in this process, from a
        random start: a run repeats no query until it has sent the whole list. (Each user walking
        the list from its own random start repeated roughly a quarter of the queries of a 30-s
        run at 50 req/s, so the API's query-vector cache answered them.)"""
        cursor = _CURSORS.setdefault(type(self).__name__, itertools.count(random.randrange(len(self.items))))
        return self.items[next(cursor) % len(self.items)]


class RecallUser(_Replay):
    def on_start(self) -> None:
        super().on_start()
        self.keys: dict[str, str] = workload()["keys"]

    @task
    def replay(self) -> None:
        item = self.next_item()
        headers = {"Authorization": f"Bearer {self.keys[item['tenant']]}"}
        if item["kind"] == "write":
            path, name, ok_status = "/v1/memories", "memories:write", 202
        else:
            path, name, ok_status = "/v1/recall", f"recall:{item['kind']}", 200
        with self.client.post(path, json=item["body"], headers=headers, name=name, catch_response=True) as resp:
            if resp.status_code != ok_status:
                resp.failure(f"HTTP {resp.status_code}: {(resp.text or '')[:200]}")
            elif ok_status == 200:
                body = resp.json() or {}
                if "results" not in body:
                    resp.failure("no results field in the recall response")
                elif "engine_requests" in (body.get("timings") or {}):
                    _ENGINE_REQUESTS[int(body["timings"]["engine_requests"])] += 1


class EngineUser(_Replay):
    def pick(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [it for it in items if it.get("msearch")]

    def on_start(self) -> None:
        super().on_start()
        self.headers = {"Content-Type": "application/x-ndjson"}
        auth = os.environ.get("BRAIN_LOAD_AUTH")
        if auth:
            self.headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()

    @task
    def replay(self) -> None:
        item = self.next_item()
        with self.client.post(
            f"/{item['msearch_index']}/_msearch",
            data=item["msearch"],
            headers=self.headers,
            name=f"engine:{item['kind']}",
            catch_response=True,
        ) as resp:
            if resp.status_code != 200:
                resp.failure(f"HTTP {resp.status_code}: {(resp.text or '')[:200]}")
                return
            errors = [r["error"] for r in resp.json()["responses"] if "error" in r]
            if errors:
                resp.failure(f"sub-search failed: {json.dumps(errors[0])[:200]}")
