"""Helpers shared by the ingestion integration tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from opensearchpy import OpenSearch
from pydantic import SecretStr

from brain_search.config import Settings

DONE = ("succeeded", "failed")


def wait_task(api: Any, headers: dict[str, str], task_id: str, timeout_s: float = 90) -> dict[str, Any]:
    """Poll ``GET /v1/tasks/{id}`` until the task is finished; returns its final status."""
    deadline = time.monotonic() + timeout_s
    while True:
        r = api.get(f"/v1/tasks/{task_id}", headers=headers)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        if body["state"] in DONE:
            return body
        assert time.monotonic() < deadline, f"task {task_id} not finished after {timeout_s}s: {body}"
        time.sleep(0.2)


def broker_state(settings: Settings) -> str:
    """The ingest queue's Redis side in words (messages waiting, delivered and unacknowledged),
    for a failure message."""
    import redis

    from brain_search.ingest.broker import queue_keys
    from brain_search.ingest.reconcile import message_task_id

    assert settings.redis_url
    r = redis.Redis.from_url(settings.redis_url, socket_timeout=5)
    try:
        waiting = [message_task_id(m) for key in queue_keys(settings) for m in r.lrange(key, 0, -1)]
        unacked = [message_task_id(m) for m in r.hvals(f"{settings.index_prefix}:unacked")]
        keys = sorted(k.decode() for k in r.scan_iter(f"{settings.index_prefix}:*"))
        return f"Redis: waiting {waiting}, unacknowledged {unacked}, keys {keys}"
    except redis.RedisError as exc:
        return f"Redis did not answer: {exc}"
    finally:
        r.close()


def memory_ids(client: OpenSearch, settings: Settings, tenant_id: str | None = None) -> list[str]:
    """Every memory id in the memories index (after a refresh), duplicates included."""
    client.indices.refresh(index=settings.memories_alias)
    query: dict[str, Any] = {"term": {"tenant_id": tenant_id}} if tenant_id else {"match_all": {}}
    r = client.search(
        index=settings.memories_alias,
        body={"query": query, "size": 10_000, "_source": ["memory_id"]},
    )
    return [h["_source"]["memory_id"] for h in r["hits"]["hits"]]


def kill_group(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL a process started with ``start_new_session`` and all its children, as a crash would."""
    assert proc is not None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def stop_group(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM the process group, SIGKILL after 30 s; nothing to do when it has already exited."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass


class WorkerProcess:
    """A real `brain-search worker` (Celery) in its own process group, logging to a file."""

    def __init__(self, env: dict[str, str], log_path: Path, name: str, loglevel: str = "info") -> None:
        self.env = env
        self.log_path = log_path
        self.name = name
        self.loglevel = loglevel
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, ready_timeout_s: float = 120) -> WorkerProcess:
        cmd = [
            sys.executable,
            "-m",
            "brain_search.commands.cli",
            "worker",
            f"--loglevel={self.loglevel}",
            f"--hostname={self.name}@%h",
        ]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                cmd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + ready_timeout_s
        while f"{self.name}@" not in self.log() or " ready." not in self.log():
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"worker not ready after {ready_timeout_s}s:\n{self.log()[-3000:]}")
            time.sleep(0.2)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill9(self) -> None:
        """SIGKILL the whole worker (main process and pool children), as a crash would."""
        kill_group(self.proc)

    def stop(self) -> None:
        stop_group(self.proc)


def worker_env(settings: Settings, **overrides: object) -> dict[str, str]:
    """The environment of a worker process for these settings: every setting that differs from
    its default, as a BRAIN_* variable, plus the overrides."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env["HF_HUB_OFFLINE"] = "1"
    values: dict[str, object] = {k: getattr(settings, k) for k in settings.model_fields_set}
    values.update(cache_dir=settings.cache_dir, **overrides)
    for k, v in values.items():
        if v is None:
            continue
        env[f"BRAIN_{k.upper()}"] = v.get_secret_value() if isinstance(v, SecretStr) else str(v)
    return env


def wait_celery_tasks(queue: Any, tenant_id: str, task_ids: list[str], timeout_s: float) -> dict[str, Any]:
    """Poll a CeleryQueue until every task is finished; returns task id → TaskStatus."""
    from brain_search.errors import StoreUnavailable

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            statuses = {t: queue.status(tenant_id, t) for t in task_ids}
        except StoreUnavailable:  # the task records' node is (re)starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
            continue
        if all(s.state in DONE for s in statuses.values()):
            return statuses
        if time.monotonic() > deadline:
            raise AssertionError(f"tasks not finished after {timeout_s}s: {[s.state for s in statuses.values()]}")
        time.sleep(0.5)


def tenant_headers(api: Any, tenant: str) -> dict[str, str]:
    from tests.conftest import ADMIN_KEY

    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    assert api.post("/v1/admin/tenants", json={"tenant_id": tenant}, headers=admin).status_code == 201
    key = api.post(f"/v1/admin/tenants/{tenant}/keys", json={}, headers=admin).json()["key"]
    return {"Authorization": f"Bearer {key}"}


def kill_move_mid_copy(cmd: list[str], env: dict[str, str]) -> None:
    """Run a move command (``reindex``, ``tenant-index``) and SIGKILL its process group at its
    first ``copy:`` progress line, once a page is in the target index."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode()
        seen += line
        if "copy:" in line:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        assert line or proc.poll() is None, seen
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, seen
