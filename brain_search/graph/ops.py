"""Graph operations that also touch the memories: move (rename) and delete, and their tasks.

A move re-labels the node and its whole subtree in the nodes index at once, then re-labels the
memories' ``node_path`` with an ``_update_by_query`` that runs as an OpenSearch task
(``wait_for_completion=false``); a cascading delete removes the memories with a
``_delete_by_query`` task the same way. Each task is recorded under the tenant (``tasks_index``)
so a tenant can follow its progress and never sees another tenant's task.

While a move task runs, memories not yet re-labelled still carry the old path, so a recall on the
new label can miss them until the task completes. A memory written under the old path after the
task took its snapshot keeps the old path (counted in ``version_conflicts`` when it raced a write).

The API's cascading delete forgets the memories instead (``forget``: tombstones, and a fence over
the subtree, so no queued write brings one back or lands under the deleted node; their history
and dead letters go too), whether or not any is stored yet; its task record then names the
forget's task (``forget_...``) where an engine task id would be.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from brain_search_client.models.nodes import DeleteResult, MoveResult, TaskInfo, TaskKind
from opensearchpy import NotFoundError
from opensearchpy.helpers import bulk

from brain_search.errors import Conflict, InvalidInput, NotFound
from brain_search.graph.store import GraphStore, in_subtree, node_doc_id, normalize_label, parent_of
from brain_search.store.scope import TENANT_FIELD, TenantScope, tenant_term


# ------------------------------------------------------------------ pure builders
def relabel_script(from_label: str, to_label: str) -> dict[str, Any]:
    """Painless for ``_update_by_query``: ``from/x/y`` → ``to/x/y``; other paths are a noop."""
    source = (
        "String p = ctx._source.node_path; "
        "if (p == null) { ctx.op = 'noop'; } "
        "else if (p == params.from) { ctx._source.node_path = params.to; } "
        "else if (p.startsWith(params.from + '/')) { "
        "ctx._source.node_path = params.to + p.substring(params.from.length()); } "
        "else { ctx.op = 'noop'; }"
    )
    return {"lang": "painless", "source": source, "params": {"from": from_label, "to": to_label}}


def subtree_memories_query(scope: TenantScope, label: str) -> dict[str, Any]:
    """The tenant's memories whose ``node_path`` is ``label`` or under it."""
    return {"bool": {"filter": scope.memories([label])}}


def relabel(label: str, from_label: str, to_label: str) -> str:
    return to_label + label[len(from_label) :]


def task_doc_id(tenant_id: str, task_id: str) -> str:
    return hashlib.sha256(f"{tenant_id}\x1f{task_id}".encode()).hexdigest()[:40]


# ------------------------------------------------------------------ operations
def count_memories(graph: GraphStore, tenant_id: str, label: str) -> int:
    """Memories under ``label``'s subtree, a memory indexed a moment ago included (a refresh first)."""
    scope = graph.memories(tenant_id)
    graph.client.indices.refresh(index=scope.index)
    r = graph.client.count(
        index=scope.index, body={"query": subtree_memories_query(scope, label)}, params=scope.params()
    )
    return int(r["count"])


def move_node(graph: GraphStore, tenant_id: str, ref: str, new_label: str) -> MoveResult:
    """Give the node ``ref`` the label ``new_label``; its descendants follow, and so do the
    memories' ``node_path`` (as a task). InvalidInput when a target label is taken or the node
    would move under itself; missing ancestors of the target are created."""
    node = graph.get(tenant_id, ref)
    old, new = node.label, normalize_label(new_label)
    if new == old:
        return MoveResult(node=node, relabelled_nodes=0)
    if in_subtree(new, old):
        raise InvalidInput("label", f"cannot move {old!r} under itself")
    subtree = graph.subtree(tenant_id, old)
    targets = {n.id: normalize_label(relabel(n.label, old, new)) for n in subtree}
    taken = [n for n in graph.by_labels(tenant_id, list(targets.values())) if n.id not in targets]
    if taken:
        raise InvalidInput("label", f"a node with label {taken[0].label!r} already exists (id {taken[0].id})")
    graph.ensure_ancestors(tenant_id, new)
    now = datetime.now(UTC)
    moved = [
        n.model_copy(update={"label": targets[n.id], "parent": parent_of(targets[n.id]), "updated_at": now})
        for n in subtree
    ]
    # partial updates: an edge or description written meanwhile is kept
    actions = [
        {
            "_op_type": "update",
            "_id": node_doc_id(tenant_id, n.id),
            "retry_on_conflict": 3,
            "doc": {"label": n.label, "label_tree": n.label, "parent": n.parent, "updated_at": now.isoformat()},
        }
        for n in moved
    ]
    bulk(graph.client, actions, index=graph.index, refresh=True, raise_on_error=True)
    scope = graph.memories(tenant_id)
    body = {"query": subtree_memories_query(scope, old), "script": relabel_script(old, new)}
    r = graph.client.update_by_query(
        index=scope.index,
        body=body,
        params=scope.params(wait_for_completion="false", conflicts="proceed", refresh="true"),
    )
    task = _record(graph, tenant_id, "move", node.id, from_label=old, to_label=new, opensearch_task=r["task"])
    return MoveResult(node=next(n for n in moved if n.id == node.id), relabelled_nodes=len(moved), task=task)


def delete_node(
    graph: GraphStore,
    tenant_id: str,
    ref: str,
    cascade: bool = False,
    *,
    forget: Callable[[str, str], str] | None = None,
) -> DeleteResult:
    """Delete the node and its subtree. Without ``cascade`` it refuses (Conflict) while the node
    has child nodes or any memory lives under it; with ``cascade`` those memories are forgotten
    by ``forget(tenant_id, label)`` (the API's: ``IngestService.forget_subtree``, a forget task
    that leaves tombstones and removes their history and dead letters; it returns the forget's
    task id), or, without ``forget``, by a bare ``_delete_by_query`` task. Edges from other nodes
    to the deleted ones are removed."""
    node = graph.get(tenant_id, ref)
    subtree = graph.subtree(tenant_id, node.label)
    memories = count_memories(graph, tenant_id, node.label)
    children = len(subtree) - 1
    if not cascade and (memories or children):
        raise Conflict(
            f"node {node.label!r} has {children} descendant node(s) and {memories} memories; "
            "delete with cascade=true to delete them too",
            memories=memories,
            descendants=children,
        )
    task = None
    if cascade and forget is not None:  # even with none stored: its fence covers writes still queued
        task = _record(
            graph,
            tenant_id,
            "delete",
            node.id,
            from_label=node.label,
            to_label=None,
            opensearch_task=forget(tenant_id, node.label),
        )
    elif memories:
        scope = graph.memories(tenant_id)
        r = graph.client.delete_by_query(
            index=scope.index,
            body={"query": subtree_memories_query(scope, node.label)},
            params=scope.params(wait_for_completion="false", conflicts="proceed", refresh="true"),
        )
        task = _record(
            graph, tenant_id, "delete", node.id, from_label=node.label, to_label=None, opensearch_task=r["task"]
        )
    ids = [n.id for n in subtree]
    _drop_edges_to(graph, tenant_id, ids)
    actions = [{"_op_type": "delete", "_id": node_doc_id(tenant_id, i)} for i in ids]
    bulk(graph.client, actions, index=graph.index, refresh=True, raise_on_error=False)
    return DeleteResult(deleted_nodes=ids, memories=memories, task=task)


def get_task(graph: GraphStore, tenant_id: str, task_id: str) -> TaskInfo:
    """The task's progress; NotFound for an unknown task or one of another tenant."""
    doc_id = task_doc_id(tenant_id, task_id)
    try:
        src = graph.client.get(index=graph.tasks_index, id=doc_id)["_source"]
    except NotFoundError:
        raise NotFound("task", task_id) from None
    info = TaskInfo(**{k: v for k, v in src.items() if k in TaskInfo.model_fields})
    if src.get("result"):
        return info.model_copy(update=src["result"])
    if str(src["opensearch_task"]).startswith(FORGET_PREFIX):
        return info.model_copy(update=_forget_progress(graph, tenant_id, src["opensearch_task"]))
    try:
        t = graph.client.tasks.get(task_id=src["opensearch_task"])
    except NotFoundError:
        return info.model_copy(update={"state": "unknown"})
    update = task_progress(t)
    if update["completed"]:
        graph.client.update(index=graph.tasks_index, id=doc_id, body={"doc": {"result": update}})
    return info.model_copy(update=update)


def task_progress(t: dict[str, Any]) -> dict[str, Any]:
    """OpenSearch ``_tasks/<id>`` answer → TaskInfo fields (pure)."""
    completed = bool(t.get("completed"))
    status = (t.get("response") if completed else None) or t.get("task", {}).get("status", {})
    failures = [str(f.get("cause", f))[:300] for f in (status.get("failures") or [])[:10]]
    if t.get("error"):
        failures.append(str(t["error"].get("reason", t["error"]))[:300])
    state = "running" if not completed else ("failed" if failures else "completed")
    return {
        "completed": completed,
        "state": state,
        "total": int(status.get("total", 0)),
        "updated": int(status.get("updated", 0)),
        "deleted": int(status.get("deleted", 0)),
        "version_conflicts": int(status.get("version_conflicts", 0)),
        "failures": failures,
    }


# ------------------------------------------------------------------ internals
FORGET_PREFIX = "forget_"
"""a cascade's task that is a forget (``ingest/forget.py``), not an engine task: its id"""


def _forget_progress(graph: GraphStore, tenant_id: str, forget_task: str) -> dict[str, Any]:
    """A forget's record (same index, ``Forgetter._save``) → TaskInfo fields."""
    r = graph.client.get(index=graph.tasks_index, id=task_doc_id(tenant_id, forget_task), ignore=[404])
    result = ((r.get("_source") or {}) if r.get("found") else {}).get("result")
    if not result:
        return {"state": "unknown"}
    state = {"running": "running", "succeeded": "completed", "failed": "failed"}[result["state"]]
    return {
        "completed": state != "running",
        "state": state,
        "total": int(result.get("memories", 0)),
        "deleted": int(result.get("memories", 0)),
        "failures": [result["error"]] if result.get("error") else [],
    }


def _record(
    graph: GraphStore,
    tenant_id: str,
    kind: TaskKind,
    node_id: str,
    *,
    from_label: str,
    to_label: str | None,
    opensearch_task: str,
) -> TaskInfo:
    info = TaskInfo(
        task_id=f"{kind}_{secrets.token_hex(8)}",
        kind=kind,
        node_id=node_id,
        from_label=from_label,
        to_label=to_label,
        created_at=datetime.now(UTC),
    )
    doc = {
        TENANT_FIELD: tenant_id,
        "opensearch_task": opensearch_task,
        **info.model_dump(mode="json", include={"task_id", "kind", "node_id", "from_label", "to_label", "created_at"}),
    }
    graph.client.index(
        index=graph.tasks_index, id=task_doc_id(tenant_id, info.task_id), body=doc, params={"refresh": "true"}
    )
    return info


def _drop_edges_to(graph: GraphStore, tenant_id: str, ids: list[str]) -> None:
    """Remove ``ids`` from the related lists of the tenant's other nodes."""
    query = {"bool": {"filter": [tenant_term(tenant_id), {"terms": {"related": ids}}]}}
    graph.client.update_by_query(
        index=graph.index,
        body={
            "query": query,
            "script": {
                "lang": "painless",
                "source": "ctx._source.related.removeIf(x -> params.ids.contains(x));",
                "params": {"ids": ids},
            },
        },
        params={"refresh": "true", "conflicts": "proceed"},
    )
