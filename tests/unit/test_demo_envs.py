"""The demo's processes get their own role's engine settings; the worker never the admin key."""

from __future__ import annotations

from brain_search.local.demo import role_envs


def test_the_worker_gets_neither_the_admin_key_nor_the_api_role() -> None:
    env = {"BRAIN_ADMIN_KEY": "adm", "BRAIN_JOB_SIGNING_KEYS": "sig", "BRAIN_OPENSEARCH_URL": "http://127.0.0.1:9200"}
    api, worker = role_envs(
        env,
        {"BRAIN_OPENSEARCH_URL": "https://127.0.0.1:9243", "BRAIN_OPENSEARCH_USER": "api"},
        {"BRAIN_OPENSEARCH_URL": "https://127.0.0.1:9243", "BRAIN_OPENSEARCH_USER": "worker"},
    )
    assert api["BRAIN_ADMIN_KEY"] == "adm" and api["BRAIN_OPENSEARCH_USER"] == "api"
    assert "BRAIN_ADMIN_KEY" not in worker and worker["BRAIN_OPENSEARCH_USER"] == "worker"
    assert worker["BRAIN_JOB_SIGNING_KEYS"] == "sig" and worker["BRAIN_OPENSEARCH_URL"].startswith("https://")
    assert "BRAIN_ADMIN_KEY" in env  # the shared environment is left as it was


def test_unsecured_both_keep_the_node_and_the_worker_still_has_no_admin_key() -> None:
    env = {"BRAIN_ADMIN_KEY": "adm", "BRAIN_OPENSEARCH_URL": "http://127.0.0.1:9200"}
    api, worker = role_envs(env, {}, {})
    assert api == env and worker == {"BRAIN_OPENSEARCH_URL": "http://127.0.0.1:9200"}
