"""Issue 54 item 12: an API whose clock runs an hour ahead stamps versions at most
BRAIN_VERSION_MAX_SKEW_S ahead of the engine's clock (counted in /metrics), so a delete from a
replica with a right clock wins once that bound has passed (before: the write was undeletable
for the hour). On the real engine, with a faked clock."""

from __future__ import annotations

import re
import time

import pytest

from brain_search.ingest.versions import VersionClock, engine_now_us
from tests.integration.ingest_support import wait_task

pytestmark = pytest.mark.integration
HOUR_US = 3600 * 10**6
SKEW_US = 1_000_000


def test_a_clock_an_hour_ahead_cannot_make_a_write_undeletable(api, api_state, make_tenant) -> None:
    headers = make_tenant("skew")
    s = api_state.settings
    engine = lambda: engine_now_us(api_state.client, s.memories_alias)  # noqa: E731
    ingest = api_state.ingest
    ingest.versions = VersionClock(lambda: time.time_ns() // 1000 + HOUR_US, engine, SKEW_US)  # this replica
    r = api.post(
        "/v1/memories",
        json={"content": "the launch code is BLUEHERON", "memory_id": "m", "refresh": True},
        headers=headers,
    )
    assert r.status_code == 202, r.text
    assert wait_task(api, headers, r.json()["task_id"])["indexed"] == 1
    stored = api.get("/v1/memories/m", headers=headers).json()["version"]
    assert stored <= engine() + SKEW_US, "the version ran ahead of the engine's clock by more than the bound"
    text = api.get("/metrics").text
    assert re.search(r'brain_versions_clamped_total\{direction="ahead"\} [1-9]', text), text[-2000:]
    skew = float(re.search(r"\nbrain_version_clock_skew_seconds (\S+)", text).group(1))  # type: ignore[union-attr]
    assert 3590 < skew < 3610

    # another replica, its clock right: once the bound has passed its delete outranks the write
    ingest.versions = VersionClock(reference_us=engine, max_skew_us=SKEW_US)
    time.sleep(SKEW_US / 1e6 + 0.2)
    assert api.delete("/v1/memories/m", headers=headers).status_code == 204
    assert api.get("/v1/memories/m", headers=headers).status_code == 404
    r = api.post("/v1/recall", json={"query": "launch code BLUEHERON"}, headers=headers)
    assert "m" not in [x["id"] for x in r.json()["results"]]
