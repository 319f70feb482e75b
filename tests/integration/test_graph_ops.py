"""The knowledge graph over the API and GraphStore, on the real stack: list, move (with the
memories' re-labelling task), delete (refused / cascade), related edges, neighbors, and the
X-axis scope recall filters on."""

from __future__ import annotations

import time

import pytest

from brain_search.store.scope import scope_filter
from tests.seed import Mem, node_paths, seed_memories

pytestmark = pytest.mark.integration

TREE = [
    "aiConnected/Brain/Architecture",
    "aiConnected/Brain/Memory",
    "aiConnected/BrainStorm",
    "aiConnected/Web",
    "Research/Memory",
]


def _mk(api, headers, labels=TREE) -> dict[str, dict]:
    out = {}
    for label in labels:
        r = api.post("/v1/nodes", json={"label": label}, headers=headers)
        assert r.status_code == 201, r.text
        out[label] = r.json()
    return out


def _wait_task(api, headers, task_id: str, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        t = api.get(f"/v1/nodes/tasks/{task_id}", headers=headers)
        assert t.status_code == 200, t.text
        if t.json()["completed"] or time.monotonic() > deadline:
            return t.json()
        time.sleep(0.2)


def _search_ids(client, settings, tenant: str, paths: list[str]) -> set[str]:
    r = client.search(
        index=settings.memories_alias,
        body={"query": {"bool": {"filter": scope_filter(tenant, paths)}}, "size": 100},
        params={"routing": tenant},
    )
    return {h["_source"]["memory_id"] for h in r["hits"]["hits"]}


def test_create_makes_ancestors_and_lists_by_prefix_subtree_label(api, make_tenant) -> None:
    h = make_tenant("acme")
    _mk(api, h)
    labels = [n["label"] for n in api.get("/v1/nodes", headers=h).json()["nodes"]]
    assert labels == sorted(labels)
    assert {"aiConnected", "aiConnected/Brain", "Research"} <= set(labels)  # ancestors were created
    sub = [n["label"] for n in api.get("/v1/nodes", params={"subtree": "aiConnected/Brain"}, headers=h).json()["nodes"]]
    assert sub == ["aiConnected/Brain", "aiConnected/Brain/Architecture", "aiConnected/Brain/Memory"]
    pre = [n["label"] for n in api.get("/v1/nodes", params={"prefix": "aiConnected/Br"}, headers=h).json()["nodes"]]
    assert pre == [
        "aiConnected/Brain",
        "aiConnected/Brain/Architecture",
        "aiConnected/Brain/Memory",
        "aiConnected/BrainStorm",
    ]
    one = api.get("/v1/nodes", params={"label": "aiConnected/Web"}, headers=h).json()["nodes"]
    assert [n["label"] for n in one] == ["aiConnected/Web"]
    assert api.get("/v1/nodes", params={"label": "no/such"}, headers=h).status_code == 404
    # pages
    p1 = api.get("/v1/nodes", params={"limit": 3}, headers=h).json()
    p2 = api.get("/v1/nodes", params={"limit": 3, "after": p1["next_after"]}, headers=h).json()
    assert [n["label"] for n in p1["nodes"] + p2["nodes"]] == labels[:6]


def test_validation_is_422_with_the_field(api, make_tenant) -> None:
    h = make_tenant("acme")
    r = api.post("/v1/nodes", json={"label": "///"}, headers=h)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "label"
    r = api.post("/v1/nodes", json={"label": "a", "id": "bad id!"}, headers=h)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "id"
    r = api.post("/v1/nodes", json={"label": "a", "tenant_id": "other"}, headers=h)  # tenant never from the body
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "tenant_id"
    api.post("/v1/nodes", json={"label": "a"}, headers=h)
    r = api.post("/v1/nodes", json={"label": "a"}, headers=h)
    assert r.status_code == 422 and "already exists" in r.json()["detail"][0]["msg"]
    nid = api.get("/v1/nodes", params={"label": "a"}, headers=h).json()["nodes"][0]["id"]
    r = api.get(f"/v1/nodes/{nid}/neighbors", params={"depth": 9}, headers=h)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "depth"]


def test_related_edges_both_directions_and_neighbors(api, make_tenant) -> None:
    h = make_tenant("acme")
    n = _mk(api, h)
    brain = api.get("/v1/nodes", params={"label": "aiConnected/Brain"}, headers=h).json()["nodes"][0]
    research = n["Research/Memory"]
    r = api.post(f"/v1/nodes/{brain['id']}/related/{research['id']}", headers=h)
    assert r.status_code == 200 and r.json()["related"] == [research["id"]]
    assert api.get(f"/v1/nodes/{research['id']}", headers=h).json()["related"] == [brain["id"]]
    assert api.post(f"/v1/nodes/{brain['id']}/related/{research['id']}", headers=h).json()["related"] == [
        research["id"]
    ]  # idempotent
    assert api.post(f"/v1/nodes/{brain['id']}/related/{brain['id']}", headers=h).status_code == 422

    nb = api.get(f"/v1/nodes/{brain['id']}/neighbors", headers=h).json()["neighbors"]
    got = {(x["node"]["label"], x["relation"], x["distance"]) for x in nb}
    assert got == {
        ("aiConnected", "parent", 1),
        ("aiConnected/Brain/Architecture", "child", 1),
        ("aiConnected/Brain/Memory", "child", 1),
        ("Research/Memory", "related", 1),
    }
    nb2 = api.get(f"/v1/nodes/{brain['id']}/neighbors", params={"depth": 2}, headers=h).json()["neighbors"]
    two = {(x["node"]["label"], x["distance"]) for x in nb2 if x["distance"] == 2}
    assert two == {("aiConnected/BrainStorm", 2), ("aiConnected/Web", 2), ("Research", 2)}

    r = api.delete(f"/v1/nodes/{research['id']}/related/{brain['id']}", headers=h)
    assert r.status_code == 200 and r.json()["related"] == []
    assert api.get(f"/v1/nodes/{brain['id']}", headers=h).json()["related"] == []


def test_brain_not_aiconnected_generally(api, make_tenant, client, embedder) -> None:
    """Spec 6.2: a filter on aiConnected/Brain takes its subtree, not its parent nor siblings."""
    h = make_tenant("acme")
    _mk(api, h)
    s = api.app.state.brain.settings
    graph = api.app.state.brain.graph
    seed_memories(
        client,
        s,
        embedder,
        [
            Mem("acme", "root", "aiConnected company goals for the year", "aiConnected"),
            Mem("acme", "brain", "Brain is the memory product", "aiConnected/Brain"),
            Mem("acme", "arch", "Brain stores vectors per node", "aiConnected/Brain/Architecture"),
            Mem("acme", "storm", "brainstorm notes about names", "aiConnected/BrainStorm"),
            Mem("acme", "web", "the marketing website redesign", "aiConnected/Web"),
            Mem("acme", "res", "papers on episodic memory", "Research/Memory"),
            Mem("other", "brain", "another tenant's Brain memory", "aiConnected/Brain"),
        ],
    )
    scope = graph.expand_scope("acme", ["aiConnected/Brain"], 0)
    assert scope == ["aiConnected/Brain"]
    assert _search_ids(client, s, "acme", scope) == {"brain", "arch"}
    # by id, with a redundant descendant: the same single subtree
    brain_id = graph.get("acme", "aiConnected/Brain").id
    assert graph.expand_scope("acme", [brain_id, "aiConnected/Brain/Architecture"], 0) == ["aiConnected/Brain"]
    # related expansion
    graph.relate("acme", "aiConnected/Brain", "Research/Memory")
    scope = graph.expand_scope("acme", ["aiConnected/Brain"], 1)
    assert scope == ["aiConnected/Brain", "Research/Memory"]
    assert _search_ids(client, s, "acme", scope) == {"brain", "arch", "res"}
    assert graph.expand_scope("acme", None, 2) == []
    from brain_search.errors import InvalidInput

    with pytest.raises(InvalidInput, match="unknown node"):
        graph.expand_scope("other", ["aiConnected/Brain"], 0)  # nodes are per tenant


def test_move_relabels_subtree_and_memories_through_a_task(api, make_tenant, client, embedder) -> None:
    h = make_tenant("acme")
    other = make_tenant("other")
    _mk(api, h)
    _mk(api, other, ["aiConnected/Brain/Architecture"])
    s = api.app.state.brain.settings
    seed_memories(
        client,
        s,
        embedder,
        [Mem("acme", f"b{i}", f"brain note {i}", "aiConnected/Brain") for i in range(5)]
        + [Mem("acme", "arch", "architecture note", "aiConnected/Brain/Architecture")]
        + [Mem("acme", "storm", "brainstorm", "aiConnected/BrainStorm")]
        + [Mem("other", "arch", "other tenant", "aiConnected/Brain/Architecture")],
    )
    brain = api.get("/v1/nodes", params={"label": "aiConnected/Brain"}, headers=h).json()["nodes"][0]
    arch_id = api.get("/v1/nodes", params={"label": "aiConnected/Brain/Architecture"}, headers=h).json()["nodes"][0][
        "id"
    ]

    # refused targets
    r = api.patch(f"/v1/nodes/{brain['id']}", json={"label": "aiConnected/Brain/Inner"}, headers=h)
    assert r.status_code == 422 and "under itself" in r.json()["detail"][0]["msg"]
    r = api.patch(f"/v1/nodes/{brain['id']}", json={"label": "aiConnected/Web"}, headers=h)
    assert r.status_code == 422 and "already exists" in r.json()["detail"][0]["msg"]

    web_id = api.get("/v1/nodes", params={"label": "aiConnected/Web"}, headers=h).json()["nodes"][0]["id"]
    api.post(f"/v1/nodes/{brain['id']}/related/{web_id}", headers=h)
    r = api.patch(f"/v1/nodes/{brain['id']}", json={"label": "Products/Brain", "description": "moved"}, headers=h)
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["node"]["label"] == "Products/Brain" and body["node"]["id"] == brain["id"]
    assert body["node"]["description"] == "moved" and body["relabelled_nodes"] == 3
    assert api.get(f"/v1/nodes/{brain['id']}", headers=h).json()["related"] == [web_id]  # edges survive a move
    task = _wait_task(api, h, body["task"]["task_id"])
    assert task["state"] == "completed" and task["updated"] == 6 and task["total"] == 6, task

    paths = node_paths(client, s, "acme")
    assert {paths[f"b{i}"] for i in range(5)} == {"Products/Brain"}
    assert paths["arch"] == "Products/Brain/Architecture"
    assert paths["storm"] == "aiConnected/BrainStorm"  # a sibling sharing the string prefix stays
    assert node_paths(client, s, "other") == {"arch": "aiConnected/Brain/Architecture"}  # other tenant untouched
    arch = api.get(f"/v1/nodes/{arch_id}", headers=h).json()
    assert arch["label"] == "Products/Brain/Architecture" and arch["parent"] == "Products/Brain"
    assert api.get("/v1/nodes", params={"label": "Products"}, headers=h).status_code == 200  # new ancestor
    # the old label is free again
    assert api.post("/v1/nodes", json={"label": "aiConnected/Brain"}, headers=h).status_code == 201
    # a task of another tenant does not exist for this one
    assert api.get(f"/v1/nodes/tasks/{body['task']['task_id']}", headers=other).status_code == 404
    # a description-only patch is 200 and starts no task
    r = api.patch(f"/v1/nodes/{arch_id}", json={"description": "how it is built"}, headers=h)
    assert r.status_code == 200 and r.json()["task"] is None and r.json()["node"]["description"] == "how it is built"


def test_delete_refuses_then_cascades(api, make_tenant, client, embedder) -> None:
    h = make_tenant("acme")
    n = _mk(api, h)
    s = api.app.state.brain.settings
    seed_memories(
        client,
        s,
        embedder,
        [
            Mem("acme", "arch", "architecture note", "aiConnected/Brain/Architecture"),
            Mem("acme", "mem", "memory note", "aiConnected/Brain/Memory"),
            Mem("acme", "web", "web note", "aiConnected/Web"),
            Mem("other", "arch", "other tenant's note", "aiConnected/Brain/Architecture"),
        ],
    )
    web = n["aiConnected/Web"]
    brain = api.get("/v1/nodes", params={"label": "aiConnected/Brain"}, headers=h).json()["nodes"][0]
    api.post(f"/v1/nodes/{web['id']}/related/{n['aiConnected/Brain/Memory']['id']}", headers=h)

    r = api.delete(f"/v1/nodes/{web['id']}", headers=h)
    assert r.status_code == 409 and r.json()["memories"] == 1
    r = api.delete(f"/v1/nodes/{brain['id']}", headers=h)
    assert r.status_code == 409 and r.json()["descendants"] == 2 and r.json()["memories"] == 2
    research = n["Research/Memory"]
    r = api.delete(f"/v1/nodes/{research['id']}", headers=h)  # empty leaf: deleted at once
    assert r.status_code == 200 and r.json() == {"deleted_nodes": [research["id"]], "memories": 0, "task": None}

    r = api.delete(f"/v1/nodes/{brain['id']}", params={"cascade": "true"}, headers=h)
    assert r.status_code == 202, r.text
    assert len(r.json()["deleted_nodes"]) == 3
    task = _wait_task(api, h, r.json()["task"]["task_id"])
    assert task["state"] == "completed" and task["deleted"] == 2
    assert set(node_paths(client, s, "acme")) == {"web"}
    assert set(node_paths(client, s, "other")) == {"arch"}
    assert api.get(f"/v1/nodes/{brain['id']}", headers=h).status_code == 404
    assert api.get(f"/v1/nodes/{web['id']}", headers=h).json()["related"] == []  # dangling edge removed


def test_wrong_tenant_and_missing_key(api, make_tenant) -> None:
    a, b = make_tenant("a"), make_tenant("b")
    node = api.post("/v1/nodes", json={"label": "x/y"}, headers=a).json()
    for method, path in [
        ("GET", f"/v1/nodes/{node['id']}"),
        ("PATCH", f"/v1/nodes/{node['id']}"),
        ("DELETE", f"/v1/nodes/{node['id']}"),
        ("GET", f"/v1/nodes/{node['id']}/neighbors"),
        ("POST", f"/v1/nodes/{node['id']}/related/{node['id']}"),
    ]:
        kw = {"json": {"description": "x"}} if method == "PATCH" else {}
        assert api.request(method, path, headers=b, **kw).status_code == 404, (method, path)
        assert api.request(method, path, **kw).status_code == 401, (method, path)
    assert api.get("/v1/nodes", headers=b).json()["nodes"] == []
    assert api.get("/v1/nodes", params={"label": "x/y"}, headers=b).status_code == 404
