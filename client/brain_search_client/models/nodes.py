"""The wire models of the knowledge graph (X axis): nodes, their neighbours, and the tasks a
move or a cascading delete runs on the memories."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Relation = Literal["parent", "child", "related"]
TaskKind = Literal["move", "delete"]


class Node(BaseModel):
    id: str
    label: str
    parent: str | None = Field(None, description="the parent's label path, derived from the label")
    description: str | None = None
    related: list[str] = Field(default_factory=list, description="ids of related nodes")
    created_at: datetime
    updated_at: datetime


class Neighbor(BaseModel):
    node: Node
    distance: int = Field(..., ge=1, description="hops from the start node")
    relation: Relation = Field(..., description="the edge through which it was first reached")
    via: str = Field(..., description="id of the node it was reached from")


class NodeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(..., min_length=1, max_length=2000, description="a path like 'aiConnected/Brain'")
    description: str | None = Field(None, max_length=4000)
    id: str | None = Field(None, description="optional stable id; derived from the label when absent")


class NodePatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str | None = Field(None, min_length=1, max_length=2000, description="a new path: moves the subtree")
    description: str | None = Field(None, max_length=4000)


class NodeList(BaseModel):
    nodes: list[Node]
    next_after: str | None = Field(default=None, description="pass as `after` for the next page")


class Neighborhood(BaseModel):
    node: Node
    depth: int
    neighbors: list[Neighbor]


class TaskInfo(BaseModel):
    """Progress of a move / delete task on the memories. Counts are memories."""

    task_id: str
    kind: TaskKind
    node_id: str
    from_label: str
    to_label: str | None = None
    completed: bool = False
    state: Literal["running", "completed", "failed", "unknown"] = "running"
    total: int = 0
    updated: int = 0
    deleted: int = 0
    version_conflicts: int = 0
    failures: list[str] = Field(default_factory=list)
    created_at: datetime


class MoveResult(BaseModel):
    node: Node
    relabelled_nodes: int = Field(..., description="the node and its descendants")
    task: TaskInfo | None = Field(default=None, description="re-labelling of the memories (None: nothing to move)")


class DeleteResult(BaseModel):
    deleted_nodes: list[str] = Field(..., description="ids of the node and its descendants")
    memories: int = Field(0, description="memories under the subtree when the delete started")
    task: TaskInfo | None = Field(default=None, description="the cascade's delete-by-query, when there was one")
