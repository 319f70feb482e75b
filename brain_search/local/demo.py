"""The main job: bring the local stack up (OpenSearch, Redis, a worker, the API with the page),
load the shipped sample memories for the tenant ``demo`` when it has none, print the spec 5.3
tiered view for the spec's example queries, and leave the API running."""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from brain_search_client import AdminClient, BrainClient, BrainError
from brain_search_client.render import render_analysis, render_tiered

from brain_search.config import Settings
from brain_search.errors import SetupError
from brain_search.local.procs import BackgroundProcess
from brain_search.local.stack import start_stack

DEMO_TENANT = "demo"
# The spec's own examples: the Z-range table (section 2) and natural-language targeting (5.2).
SPEC_QUERIES = (
    "Find where I said '53% equity'",
    "The conversation about Jacob's CTO offer",
    "What did we discuss about compensation?",
    "My thinking on fairness in partnerships",
    "Ideas related to building teams",
    # spec 5.2's own exact example
    "Find exactly where I said the equity split was 53%",
)


@dataclass
class DemoInfo:
    api_url: str
    api_key: str
    admin_key: str
    loaded: int


def sample_memories() -> list[dict[str, Any]]:
    text = files("brain_search").joinpath("data/sample_memories.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _env(settings: Settings, admin_key: str, redis_url: str | None) -> dict[str, str]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "BRAIN_ADMIN_KEY": admin_key,
        "BRAIN_JOB_SIGNING_KEYS": _job_signing_keys(settings),
        "BRAIN_CACHE_DIR": str(settings.cache_dir),
    }
    env["BRAIN_OPENSEARCH_URL"] = settings.opensearch_url
    env["BRAIN_INDEX_PREFIX"] = settings.index_prefix
    if redis_url:
        env["BRAIN_REDIS_URL"] = redis_url
    else:
        env.pop("BRAIN_REDIS_URL", None)
    return env


def api_process(settings: Settings) -> BackgroundProcess:
    return BackgroundProcess("api", settings.cache_dir / "run")


def worker_process(settings: Settings) -> BackgroundProcess:
    return BackgroundProcess("worker", settings.cache_dir / "run")


def _machine_secret(settings: Settings, name: str) -> str:
    """A secret made once for this machine's demo and kept (mode 600) in the cache dir."""
    path = settings.cache_dir / "run" / name
    if path.is_file():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(32)
    path.write_text(key)
    path.chmod(0o600)
    return key


def _admin_key(settings: Settings) -> str:
    """The admin key: the setting, else one made for this machine's demo."""
    if settings.admin_key is not None:
        return settings.admin_key.get_secret_value()
    return _machine_secret(settings, "demo-admin-key")


def _job_signing_keys(settings: Settings) -> str:
    """The ingest jobs' HMAC keys (API and worker alike): the setting, else one for this machine."""
    if settings.job_signing_keys is not None:
        return settings.job_signing_keys.get_secret_value()
    return _machine_secret(settings, "demo-job-signing-key")


def role_envs(
    env: dict[str, str], api_engine: dict[str, str], worker_engine: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The API's and the worker's environments from the shared one: each gets its own engine
    role's settings (none: the unsecured node), and the worker never gets the admin key."""
    api_env = {**env, **api_engine}
    worker_env = {k: v for k, v in env.items() if k != "BRAIN_ADMIN_KEY"} | worker_engine
    return api_env, worker_env


def bring_up(settings: Settings, with_worker: bool, log: Callable[[str], None], secured: bool = False) -> DemoInfo:
    """The stack, a worker and the API; ``secured``: the engine behind the gateway, the API as the
    ``api`` role and the worker as the ``worker`` role (gateway/nginx.py)."""
    from brain_search.gateway.rules import Role
    from brain_search.local.gateway import LocalGateway

    info = start_stack(settings, with_redis=with_worker, log=log)
    settings = settings.model_copy(update={"opensearch_url": info.opensearch_url})
    admin_key = _admin_key(settings)
    env = _env(settings, admin_key, info.redis_url)
    gateway = LocalGateway(settings, log=log) if secured else None
    if gateway:
        gateway.start()
    api_env, worker_env = role_envs(
        env, gateway.env_for(Role.api) if gateway else {}, gateway.env_for(Role.worker) if gateway else {}
    )
    if with_worker and info.redis_url:
        log("starting a Celery worker" + (" (worker role)" if secured else ""))
        worker_process(settings).start([sys.executable, "-m", "brain_search.commands.cli", "worker"], worker_env)
    api = api_process(settings)
    url = f"http://{settings.api_host}:{settings.api_port}"
    if not api.running():
        log(f"starting the API on {url}" + (" (api role, through the engine gateway)" if secured else ""))
        cmd = [
            sys.executable, "-m", "uvicorn", "brain_search.api.app:create_app", "--factory",
            "--host", settings.api_host, "--port", str(settings.api_port), "--log-level", "warning",
        ]  # fmt: skip
        api.start(cmd, api_env)
    api.wait_http(f"{url}/readyz", timeout_s=120)
    key = _demo_key(url, admin_key)
    loaded = _load_samples(url, key, log)
    return DemoInfo(url, key, admin_key, loaded)


def _demo_key(url: str, admin_key: str) -> str:
    with AdminClient(url, admin_key=admin_key, timeout=30) as admin:
        admin.tenants.ensure(DEMO_TENANT, name="Demo")  # an existing tenant (an earlier run) is fine
        return admin.keys.create(DEMO_TENANT, label="demo").key


def _load_samples(url: str, key: str, log: Callable[[str], None]) -> int:
    with BrainClient(url, api_key=key, timeout=60) as brain:
        if brain.recall("equity", limit=1).results:
            return 0
        rows = sample_memories()
        memories = [
            {
                "memory_id": m["memory_id"],
                "content": m["content"],
                "node_id": m["node"],
                "timestamp": m["timestamp"],
                "source": m.get("source"),
                "conversation_id": m.get("conversation_id"),
            }
            for m in rows
        ]
        log(f"loading {len(memories)} sample memories for tenant {DEMO_TENANT!r}")
        try:
            st = brain.memories.add_many(memories, create_nodes=True, wait=True, timeout=290)
        except BrainError as exc:  # refused, not stored, or not done within the wait
            raise SetupError(f"loading the sample memories failed: {exc}") from exc
        return st.indexed


def spec_views(url: str, key: str, queries: tuple[str, ...] = SPEC_QUERIES) -> list[str]:
    out = []
    with BrainClient(url, api_key=key, timeout=60) as brain:
        for q in queries:
            resp = brain.recall(q, tiered=True, limit=3)
            out.append(f"› {q}\n  {render_analysis(resp)}\n\n{render_tiered(resp, scores=False)}")
    return out
