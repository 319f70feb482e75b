"""Processes and HTTP load for the whole-stack fault test in test_cluster.py: API servers as real
`brain-search serve` processes, and client threads that write through `POST /v1/memories` and read
through `POST /v1/recall`, failing over between the API processes like a load balancer would."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.integration.ingest_support import kill_group, stop_group


class ApiProcess:
    """A real `brain-search serve` (uvicorn) in its own process group, logging to a file."""

    def __init__(self, env: dict[str, str], port: int, log_path: Path) -> None:
        self.env, self.port, self.log_path = env, port, log_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_timeout_s: float = 180) -> ApiProcess:
        cmd = [
            sys.executable,
            "-m",
            "brain_search.commands.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + ready_timeout_s
        while True:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log_path.read_text(errors="replace")[-3000:]
                raise AssertionError(f"API on port {self.port} not ready (exit {self.proc.returncode}):\n{tail}")
            time.sleep(0.3)

    def kill9(self) -> None:
        kill_group(self.proc)

    def stop(self) -> None:
        stop_group(self.proc)


class HttpLoad:
    """Writers and readers against several API base URLs.

    A request refused at connect time (that API is down) moves on to the next URL: it never reached
    a server, as a load balancer would skip that upstream. A request whose connection breaks after
    it was sent is an *in-flight error*: counted, then retried (writes carry their memory ids, so a
    retry cannot double a memory). 5xx answers (store or queue unavailable) are retried with
    backoff and counted. A request that still fails after every retry is a *failed request*.
    """

    def __init__(self, urls: list[str], headers: dict[str, str], make_batch: Callable[[int], list[dict[str, Any]]]):
        self.urls = urls
        self.headers = headers
        self.make_batch = make_batch
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.accepted: list[tuple[str, list[str]]] = []  # (task id, memory ids)
        self.counts: dict[str, int] = {
            "writes_ok": 0, "recalls_ok": 0, "refused_connect": 0, "in_flight_errors": 0, "http_5xx": 0,
            "http_4xx": 0, "failed_requests": 0,
        }  # fmt: skip
        self.errors: list[str] = []
        self._next = 0

    def _inc(self, key: str, detail: str | None = None) -> None:
        with self.lock:
            self.counts[key] += 1
            if detail and len(self.errors) < 20:
                self.errors.append(detail)

    def request(self, client: httpx.Client, path: str, body: dict[str, Any], tries: int = 40) -> dict[str, Any] | None:
        delay = 0.2
        for _ in range(tries):
            with self.lock:
                url = self.urls[self._next % len(self.urls)]
                self._next += 1
            try:
                r = client.post(url + path, json=body, headers=self.headers)
            except httpx.ConnectError:
                self._inc("refused_connect")
                continue  # nothing was sent: the next API, at once
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                self._inc("in_flight_errors", f"{path}: {exc!r}"[:200])
                continue
            if r.status_code >= 500:
                self._inc("http_5xx", f"{path}: {r.status_code} {r.text[:150]}")
            elif r.status_code >= 400:
                self._inc("http_4xx", f"{path}: {r.status_code} {r.text[:150]}")
                return None
            else:
                return dict(r.json())
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        self._inc("failed_requests", f"{path}: gave up after {tries} tries")
        return None

    def writer(self, first: int, step: int, pause_s: float) -> None:
        n = first
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                resp = self.request(client, "/v1/memories", {"memories": self.make_batch(n)})
                if resp is not None:
                    with self.lock:
                        self.accepted.append((resp["task_id"], list(resp["memory_ids"])))
                        self.counts["writes_ok"] += 1
                n += step
                time.sleep(pause_s)

    def reader(self, queries: list[str], pause_s: float) -> None:
        i = 0
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                resp = self.request(client, "/v1/recall", {"query": queries[i % len(queries)], "limit": 10})
                if resp is not None:
                    self._inc("recalls_ok")
                i += 1
                time.sleep(pause_s)

    def task_states(self, timeout_s: float) -> dict[str, dict[str, Any]]:
        """Poll every accepted task until it is finished (or the time is up); task id → status."""
        deadline = time.monotonic() + timeout_s
        pending = {task_id for task_id, _ in self.accepted}
        states: dict[str, dict[str, Any]] = {}
        with httpx.Client(timeout=10) as client:
            while pending and time.monotonic() < deadline:
                for task_id in sorted(pending):
                    for url in self.urls:
                        try:
                            r = client.get(f"{url}/v1/tasks/{task_id}", headers=self.headers)
                        except httpx.HTTPError:
                            continue
                        if r.status_code == 200:
                            states[task_id] = r.json()
                            if states[task_id]["state"] in ("succeeded", "failed"):
                                pending.discard(task_id)
                            break
                if pending:
                    time.sleep(1.0)
        return states
