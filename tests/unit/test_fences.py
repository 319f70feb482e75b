"""The fences of a forget (ingest/fences.py, pure): a forget's key is among the keys of every
memory it matches and of none it does not."""

from __future__ import annotations

from itertools import product

from brain_search.ingest.fences import ALL, FENCED, fence_key, fenced, keys_of


def _matches(forget: dict[str, str | None], node_path: str | None, values: dict[str, str | None]) -> bool:
    """What the forget's query matches (the node as a subtree, every other filter exactly)."""
    for k, v in forget.items():
        if v is None:
            continue
        if k == "node":
            path = (node_path or "").strip("/")
            if not (path == v or path.startswith(v + "/")):
                return False
        elif values.get(k) != v:
            return False
    return True


def test_a_forgets_key_is_a_key_of_exactly_the_memories_it_matches() -> None:
    nodes = [None, "Travel", "Travel/Japan", "Travel/Japanese", "Work"]
    convs, users = [None, "c1", "c2"], [None, "lena", "omar"]
    for f_node, f_conv, f_user in product([None, "Travel", "Travel/Japan"], convs, users):
        forget = {"node": f_node, "conversation_id": f_conv, "user_id": f_user}
        key = fence_key(forget)
        for node, conv, user in product(nodes, convs, users):
            values = {"conversation_id": conv, "user_id": user, "source": "chat"}
            assert (key in keys_of(node, values)) == _matches(forget, node, values), (forget, node, values)


def test_the_whole_tenants_fence_covers_everything() -> None:
    assert fence_key({}) == ALL
    assert ALL in keys_of(None, {}) and ALL in keys_of("A/B", {"user_id": "u"})
    assert set(FENCED) >= {"node", "conversation_id", "user_id", "agent_id"}


def test_only_a_fence_newer_than_the_job_supersedes_it() -> None:
    keys = {"m1": ["fence/all", "k1"], "m2": ["k2"]}
    assert fenced(keys, {"k1": 10, "k2": 5}, version=7) == {"m1": 10}
    assert fenced(keys, {"fence/all": 3}, version=7) == {}
