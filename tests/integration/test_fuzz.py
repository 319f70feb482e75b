"""A schema-driven fuzz of the HTTP API (schemathesis over the app's own OpenAPI document, sent
over real HTTP to uvicorn, a fixed seed): every operation gets generated valid and invalid requests with a tenant's key.
Goals: no 5xx, and nothing stored changes on a refused (4xx) request — every document of the
tenant in every index, with its sequence number, is the same before and after."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from brain_search.store.indices import IndexNames
from brain_search.tenancy.erase import tenant_query
from tests.integration.ingest_support import wait_task

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1200)]

EXAMPLES = 12  # per operation and generation mode
MUTATING = {"POST", "PUT", "PATCH", "DELETE"}


def _fingerprint(client: Any, settings_: Any, tenant: str) -> str:
    """Every document of the tenant in every index of the prefix, with its sequence number."""
    names = IndexNames.of(settings_)
    client.indices.refresh(index=names.everything)
    body = {**tenant_query(tenant), "size": 10_000, "seq_no_primary_term": True, "_source": False}
    hits = client.search(index=names.everything, body=body)["hits"]["hits"]
    rows = sorted(f"{h['_index']}/{h['_id']}/{h['_seq_no']}" for h in hits)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def _wait_forget(api: Any, headers: dict[str, str], task_id: str) -> None:
    deadline = time.monotonic() + 60
    while api.get(f"/v1/forget/{task_id}", headers=headers).json()["state"] == "running":
        assert time.monotonic() < deadline, task_id
        time.sleep(0.2)


def test_fuzz_the_http_api(api, live_api, make_tenant, client, stack_settings) -> None:
    import schemathesis
    from schemathesis.generation import GenerationMode

    headers = make_tenant("fuzz-co")
    seed = [{"content": f"fuzz seed memory {i}", "memory_id": f"f{i}"} for i in range(3)]
    r = api.post("/v1/memories", json={"memories": seed, "refresh": True}, headers=headers)
    wait_task(api, headers, r.json()["task_id"])
    schema = schemathesis.openapi.from_url(f"{live_api}/openapi.json")  # over real HTTP (uvicorn)
    server_errors: list[str] = []
    changed: list[str] = []
    calls = {"n": 0, "refused": 0}

    recorder = api.app.state.brain.feedback.recorder

    def call(case: Any) -> None:
        # what a recall returned is kept by a background writer (feedback): let the earlier
        # recalls' records land first, so only this request's own writes can change the state
        recorder.flush()
        before = _fingerprint(client, stack_settings, "fuzz-co") if case.method.upper() in MUTATING else None
        response = case.call(headers={**(case.headers or {}), **headers})
        calls["n"] += 1
        label = f"{case.method.upper()} {case.formatted_path} -> {response.status_code}"
        if response.status_code >= 500:
            server_errors.append(f"{label}: {response.text[:300]}")
        elif 400 <= response.status_code < 500:
            calls["refused"] += 1
            if before is not None and _fingerprint(client, stack_settings, "fuzz-co") != before:
                changed.append(label)
        elif response.status_code in (200, 202) and "application/json" in response.headers.get("content-type", ""):
            body = response.json()
            task = body.get("task_id") if isinstance(body, dict) else None
            if task and case.formatted_path.startswith("/v1/memories"):
                wait_task(api, headers, task)  # its writes land before the next check
            elif task and case.formatted_path.startswith(("/v1/forget", "/v1/users")):
                _wait_forget(api, headers, task)  # a forget (of a user too) runs on in the background

    t0 = time.monotonic()
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path.startswith("/v1/admin"):
            continue  # the admin key is not given: every admin call would be the same 401
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)

            @settings(
                max_examples=EXAMPLES,
                derandomize=True,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=strategy)
            def run(case: Any) -> None:
                call(case)

            try:
                run()
            except Unsatisfiable:
                continue
    print(
        f"fuzz: {calls['n']} requests ({calls['refused']} refused) in {time.monotonic() - t0:.0f} s; "
        f"5xx: {len(server_errors)}; stored state changed by a refused request: {len(changed)}"
    )
    assert not server_errors, server_errors[:10]
    assert not changed, changed[:10]
