"""Pure pieces of the graph and key handling: label paths, subtree cover, the re-label script and
its query, task progress parsing, key extraction from headers."""

from __future__ import annotations

import pytest

from brain_search.errors import InvalidInput
from brain_search.graph.ops import relabel, relabel_script, subtree_memories_query, task_progress
from brain_search.graph.store import ancestors_of, in_subtree, minimal_cover, normalize_label, parent_of
from brain_search.store.scope import TenantScope
from brain_search.tenancy.auth import api_key_from_headers


def test_label_paths() -> None:
    assert normalize_label(" aiConnected / Brain ") == "aiConnected/Brain"
    assert parent_of("a/b/c") == "a/b" and parent_of("a") is None
    assert ancestors_of("a/b/c") == ["a", "a/b"] and ancestors_of("a") == []
    with pytest.raises(InvalidInput, match="at most"):
        normalize_label("/".join("x" * 17))
    with pytest.raises(InvalidInput, match="segment"):
        normalize_label("a/b\x01c")


def test_subtree_is_by_path_segment_not_string_prefix() -> None:
    assert in_subtree("aiConnected/Brain/Architecture", "aiConnected/Brain")
    assert in_subtree("aiConnected/Brain", "aiConnected/Brain")
    assert not in_subtree("aiConnected/BrainStorm", "aiConnected/Brain")
    assert not in_subtree("aiConnected", "aiConnected/Brain")


def test_minimal_cover_keeps_first_seen_order() -> None:
    assert minimal_cover(["a/b", "c", "a", "a/x", "c"]) == ["c", "a"]
    assert minimal_cover(["a/b", "a/bc"]) == ["a/b", "a/bc"]
    assert minimal_cover([]) == []


def test_relabel_and_script() -> None:
    assert relabel("a/b/c", "a/b", "x") == "x/c"
    assert relabel("a/b", "a/b", "x/y") == "x/y"
    s = relabel_script("a/b", "x")
    assert s["params"] == {"from": "a/b", "to": "x"} and s["lang"] == "painless"
    assert "params.from + '/'" in s["source"]  # a sibling 'a/bc' is not re-labelled


def test_subtree_memories_query_is_tenant_and_path_scoped() -> None:
    q = subtree_memories_query(TenantScope("acme", "memories"), "a/b")
    assert q == {"bool": {"filter": [{"term": {"tenant_id": "acme"}}, {"terms": {"node_path": ["a/b"]}}]}}


def test_task_progress() -> None:
    running = {"completed": False, "task": {"status": {"total": 10, "updated": 4, "version_conflicts": 0}}}
    assert task_progress(running) == {
        "completed": False,
        "state": "running",
        "total": 10,
        "updated": 4,
        "deleted": 0,
        "version_conflicts": 0,
        "failures": [],
    }
    done = {"completed": True, "task": {"status": {}}, "response": {"total": 3, "deleted": 3, "failures": []}}
    assert task_progress(done)["state"] == "completed" and task_progress(done)["deleted"] == 3
    failed = {"completed": True, "response": {"total": 3, "failures": [{"cause": {"type": "x"}}]}}
    assert task_progress(failed)["state"] == "failed"
    errored = {"completed": True, "error": {"type": "t", "reason": "boom"}}
    assert task_progress(errored)["failures"] == ["boom"]


def test_api_key_from_headers() -> None:
    assert api_key_from_headers("Bearer abc ", None) == "abc"
    assert api_key_from_headers("bearer abc", "xyz") == "xyz"
    assert api_key_from_headers("Basic abc", None) is None
    assert api_key_from_headers(None, None) is None
