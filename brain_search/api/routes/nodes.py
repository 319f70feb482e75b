"""X-axis: knowledge-graph nodes of the caller's tenant. Another tenant's node is a 404.

Every route names a node by its id or by its label path, as recall does (``DELETE
/v1/nodes/Users/omar``): the path routes come before the node's own, so ``…/neighbors`` and
``…/related/{other}`` are read as those routes (a node labelled ``x/neighbors`` is reached by id)."""

from __future__ import annotations

from typing import Annotated

from brain_search_client.models.nodes import (
    DeleteResult,
    MoveResult,
    Neighborhood,
    Node,
    NodeIn,
    NodeList,
    NodePatch,
    TaskInfo,
)
from fastapi import APIRouter, Query, Response, status

from brain_search.api.deps import OrganisationDep, StateDep, TenantDep, WriterDep
from brain_search.graph.ops import delete_node, get_task, move_node
from brain_search.graph.store import MAX_NEIGHBOR_DEPTH

router = APIRouter(prefix="/v1/nodes", tags=["nodes"])


@router.post("", status_code=status.HTTP_201_CREATED)
def create_node(body: NodeIn, state: StateDep, caller: WriterDep) -> Node:
    """Create a node (and its missing ancestors). The knowledge graph is the organisation's: a
    user's key may add to it, only the organisation's key moves, relates or deletes nodes."""
    return state.graph.create(caller.tenant_id, body.label, body.description, body.id)


@router.get("")
def list_nodes(
    state: StateDep,
    tenant: TenantDep,
    prefix: Annotated[str | None, Query(max_length=2000, description="label starts with this string")] = None,
    subtree: Annotated[str | None, Query(max_length=2000, description="this label path and below")] = None,
    *,
    label: Annotated[str | None, Query(max_length=2000, description="exactly this label path")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    after: Annotated[str | None, Query(description="last label of the previous page")] = None,
) -> NodeList:
    """The tenant's nodes sorted by label, filtered by a label prefix, a subtree or an exact label."""
    if label is not None:
        return NodeList(nodes=[state.graph.get_by_label(tenant, label)])
    nodes = state.graph.list_nodes(tenant, prefix=prefix, subtree=subtree, limit=limit, after=after)
    return NodeList(nodes=nodes, next_after=nodes[-1].label if len(nodes) == limit else None)


@router.get("/tasks/{task_id}")
def node_task(task_id: str, state: StateDep, tenant: TenantDep) -> TaskInfo:
    """Progress of a move (memories re-labelled) or cascading delete (memories deleted)."""
    return get_task(state.graph, tenant, task_id)


@router.post("/{node_id:path}/related/{other:path}")
def add_related(node_id: str, other: str, state: StateDep, tenant: OrganisationDep) -> Node:
    """Relate two nodes (both directions; idempotent)."""
    return state.graph.relate(tenant, node_id, other, add=True)


@router.delete("/{node_id:path}/related/{other:path}")
def remove_related(node_id: str, other: str, state: StateDep, tenant: OrganisationDep) -> Node:
    """Remove the edge (both directions; idempotent)."""
    return state.graph.relate(tenant, node_id, other, add=False)


@router.get("/{node_id:path}/neighbors")
def neighbors(
    node_id: str,
    state: StateDep,
    tenant: TenantDep,
    depth: Annotated[int, Query(ge=1, le=MAX_NEIGHBOR_DEPTH)] = 1,
) -> Neighborhood:
    """Parent, children and related nodes, breadth-first up to `depth` hops."""
    node, found = state.graph.neighbors(tenant, node_id, depth)
    return Neighborhood(node=node, depth=depth, neighbors=found)


@router.get("/{node_id:path}")
def get_node(node_id: str, state: StateDep, tenant: TenantDep) -> Node:
    """One node, by its id or its label path (``/v1/nodes/aiConnected/Brain``), as recall takes it."""
    return state.graph.get(tenant, node_id)


@router.patch("/{node_id:path}")
def patch_node(
    node_id: str, body: NodePatch, state: StateDep, tenant: OrganisationDep, *, response: Response
) -> MoveResult:
    """Change the description and / or the label. A new label moves the node with its subtree;
    the memories follow through a task (202 with `task`; poll `GET /v1/nodes/tasks/{task_id}`)."""
    node = state.graph.get(tenant, node_id)
    if "description" in body.model_fields_set:
        node = state.graph.set_description(tenant, node.id, body.description)
    result = MoveResult(node=node, relabelled_nodes=0)
    if body.label is not None:
        result = move_node(state.graph, tenant, node.id, body.label)
    if result.task is not None:
        response.status_code = status.HTTP_202_ACCEPTED
    return result


@router.delete("/{node_id:path}")
def remove_node(
    node_id: str,
    state: StateDep,
    tenant: OrganisationDep,
    response: Response,
    *,
    cascade: Annotated[bool, Query(description="also delete descendant nodes and every memory under them")] = False,
) -> DeleteResult:
    """Delete a node. Refused (409) while it has descendants or memories unless `cascade=true`;
    then its memories are forgotten as `POST /v1/forget` would (tombstones, history and dead
    letters too) by a task (202 with `task`; poll `GET /v1/nodes/tasks/{task_id}`)."""
    result = delete_node(state.graph, tenant, node_id, cascade=cascade, forget=state.ingest.forget_subtree)
    if result.task is not None:
        response.status_code = status.HTTP_202_ACCEPTED
    return result
