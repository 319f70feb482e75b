# Generated from _async/resources.py by client/scripts/unasync.py: edit that file, then run the script.
"""The knowledge graph (nodes), feedback on recalls, and the users of an organisation."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime

from brain_search_client._common import body, build, given, node_path, params, route, segment
from brain_search_client._sync.transport import Transport, sleep
from brain_search_client.errors import WaitTimeout
from brain_search_client.models.admin import KeyInfo, KeyOut, UserKeyIn
from brain_search_client.models.feedback import FeedbackAnswer, FeedbackRequest, FeedbackSummary, ResultMark
from brain_search_client.models.forget import ForgetStatus, UserForgotten
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

WAIT_S = 120.0


class Nodes:
    """``client.nodes``: the tenant's knowledge graph. A node is named by its id or its label path
    (``aiConnected/Brain``) everywhere."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    @route("POST", "/v1/nodes")
    def create(self, label: str, *, description: str | None = None, id: str | None = None) -> Node:
        """Create a node (and its missing ancestors)."""
        new = build(NodeIn, given(label=label, description=description, id=id))
        r = self._t.request("POST", "/v1/nodes", json=body(new))
        return Node.model_validate(r.json())

    @route("GET", "/v1/nodes")
    def list(
        self,
        *,
        prefix: str | None = None,
        subtree: str | None = None,
        label: str | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> NodeList:
        """Nodes sorted by label: a label ``prefix``, a ``subtree``, or one exact ``label``; a page
        at a time (``next_after``: pass it as ``after``)."""
        query = params(prefix=prefix, subtree=subtree, label=label, limit=limit, after=after)
        r = self._t.request("GET", "/v1/nodes", params=query)
        return NodeList.model_validate(r.json())

    def iter(self, *, prefix: str | None = None, subtree: str | None = None, page_size: int = 500) -> Iterator[Node]:
        """Every node (of the prefix or subtree), page after page."""
        after: str | None = None
        while True:
            page = self.list(prefix=prefix, subtree=subtree, limit=page_size, after=after)
            yield from page.nodes
            if not page.next_after:
                return
            after = page.next_after

    @route("GET", "/v1/nodes/{node_id}")
    def get(self, ref: str) -> Node:
        r = self._t.request("GET", f"/v1/nodes/{node_path(ref)}")
        return Node.model_validate(r.json())

    @route("PATCH", "/v1/nodes/{node_id}")
    def update(
        self, ref: str, *, label: str | None = None, description: str | None = None, wait: bool = False
    ) -> MoveResult:
        """A new ``description``, and / or a new ``label``: moves the node with its subtree, the
        memories following through a task (``wait``: until it has ended)."""
        patch = build(NodePatch, given(label=label, description=description))
        r = self._t.request("PATCH", f"/v1/nodes/{node_path(ref)}", json=body(patch), idempotent=True)
        result = MoveResult.model_validate(r.json())
        if wait and result.task is not None:
            result.task = self.wait_task(result.task.task_id)
        return result

    def move(self, ref: str, label: str, *, wait: bool = True) -> MoveResult:
        """Move a node (and its subtree, and their memories) to ``label``."""
        return self.update(ref, label=label, wait=wait)

    @route("DELETE", "/v1/nodes/{node_id}")
    def delete(self, ref: str, *, cascade: bool = False, wait: bool = False) -> DeleteResult:
        """Delete a node (``Conflict`` while it has descendants or memories, unless ``cascade``:
        they are deleted too, their memories forgotten, by a task)."""
        r = self._t.request("DELETE", f"/v1/nodes/{node_path(ref)}", params=params(cascade=cascade))
        result = DeleteResult.model_validate(r.json())
        if wait and result.task is not None:
            result.task = self.wait_task(result.task.task_id)
        return result

    @route("POST", "/v1/nodes/{node_id}/related/{other}")
    def relate(self, ref: str, other: str) -> Node:
        """Relate two nodes (both directions; idempotent)."""
        r = self._t.request("POST", f"/v1/nodes/{node_path(ref)}/related/{node_path(other)}", idempotent=True)
        return Node.model_validate(r.json())

    @route("DELETE", "/v1/nodes/{node_id}/related/{other}")
    def unrelate(self, ref: str, other: str) -> Node:
        r = self._t.request("DELETE", f"/v1/nodes/{node_path(ref)}/related/{node_path(other)}")
        return Node.model_validate(r.json())

    @route("GET", "/v1/nodes/{node_id}/neighbors")
    def neighbors(self, ref: str, *, depth: int = 1) -> Neighborhood:
        r = self._t.request("GET", f"/v1/nodes/{node_path(ref)}/neighbors", params=params(depth=depth))
        return Neighborhood.model_validate(r.json())

    @route("GET", "/v1/nodes/tasks/{task_id}")
    def task(self, task_id: str) -> TaskInfo:
        r = self._t.request("GET", f"/v1/nodes/tasks/{segment(task_id)}")
        return TaskInfo.model_validate(r.json())

    def wait_task(self, task_id: str, *, timeout: float = WAIT_S, poll: float = 0.2) -> TaskInfo:
        """A move's or a cascade's task once it has ended; ``WaitTimeout`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.task(task_id)
            if info.state != "running":
                return info
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"node task {task_id} still running after {timeout:.0f} s", info)
            sleep(poll)
            poll = min(poll * 1.5, 1.0)


class Feedback:
    """``client.feedback``: rate a recall, mark its results, read the summary."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    @route("POST", "/v1/recall/{recall_id}/feedback")
    def give(
        self,
        recall_id: str,
        *,
        rating: int | None = None,
        results: Mapping[str, bool] | Iterable[ResultMark] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> FeedbackAnswer:
        """Rate the recall 1–5 and / or mark results relevant or not (``{memory_id: True}``)."""
        marks = (
            [{"memory_id": k, "relevant": v} for k, v in results.items()]
            if isinstance(results, Mapping)
            else builtins.list(results or [])
        )
        request = build(FeedbackRequest, given(rating=rating) | ({"results": marks} if marks else {}))
        r = self._t.request(
            "POST",
            f"/v1/recall/{segment(recall_id)}/feedback",
            json=body(request),
            params=params(user_id=user_id, agent_id=agent_id),
            idempotent=True,
        )
        return FeedbackAnswer.model_validate(r.json())

    @route("GET", "/v1/feedback/summary")
    def summary(
        self, *, days: int | None = None, user_id: str | None = None, agent_id: str | None = None
    ) -> FeedbackSummary:
        r = self._t.request("GET", "/v1/feedback/summary", params=params(days=days, user_id=user_id, agent_id=agent_id))
        return FeedbackSummary.model_validate(r.json())


class Users:
    """``client.users``: keys held to one user of the organisation, and forgetting a user."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    @route("POST", "/v1/users/{user_id}/keys")
    def create_key(
        self,
        user_id: str,
        *,
        label: str | None = None,
        read_only: bool = False,
        expires_at: datetime | str | None = None,
    ) -> KeyOut:
        """A key held to ``user_id`` (the organisation's key only); its secret is shown once."""
        new = build(UserKeyIn, given(label=label, expires_at=expires_at) | {"read_only": read_only})
        r = self._t.request("POST", f"/v1/users/{segment(user_id)}/keys", json=body(new))
        return KeyOut.model_validate(r.json())

    @route("GET", "/v1/users/{user_id}/keys")
    def keys(self, user_id: str) -> builtins.list[KeyInfo]:
        r = self._t.request("GET", f"/v1/users/{segment(user_id)}/keys")
        return [KeyInfo.model_validate(k) for k in r.json()]

    @route("DELETE", "/v1/users/{user_id}/keys/{key_id}")
    def revoke_key(self, user_id: str, key_id: str) -> None:
        self._t.request("DELETE", f"/v1/users/{segment(user_id)}/keys/{segment(key_id)}")

    @route("DELETE", "/v1/users/{user_id}")
    def forget(self, user_id: str, *, wait: bool = False, timeout: float = WAIT_S) -> UserForgotten:
        """Forget a user: their keys at once, then every memory, version, dead letter and recall
        record of theirs, as a task (``wait``: until it has ended; the counts say what went)."""
        r = self._t.request("DELETE", f"/v1/users/{segment(user_id)}")
        started = UserForgotten.model_validate(r.json())
        if not wait:
            return started
        deadline = time.monotonic() + timeout
        status: ForgetStatus = started
        poll = 0.1
        while status.state == "running":
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"forget {started.task_id} still running after {timeout:.0f} s", status)
            sleep(poll)
            poll = min(poll * 1.5, 1.0)
            got = self._t.request("GET", f"/v1/forget/{segment(started.task_id)}")
            status = ForgetStatus.model_validate(got.json())
        return UserForgotten(**status.model_dump(), keys=started.keys)
