"""The MCP tools beside `brain_recall` — `brain_remember` and `brain_forget` over the ingest
service, `brain_feedback` over the feedback service — as (caller, arguments) → JSON answer; the
server (``mcp/server.py``) lists them and maps their errors. Each goes through the caller
(``tenancy/caller.py``): a session on a user's key writes, forgets and rates as that user only.
Composed by their callers: the API's /mcp/ mount and `brain-search mcp` (stdio)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from brain_search_client.models.feedback import FeedbackRequest
from brain_search_client.models.inputs import end_of_date
from pydantic import BaseModel, ConfigDict

from brain_search.config import Settings
from brain_search.errors import BrainSearchError, InvalidInput, cut
from brain_search.feedback.service import FeedbackService
from brain_search.ingest.forget import ForgetRequest
from brain_search.ingest.models import IngestRequest, TaskState, TaskStatus
from brain_search.ingest.prepare import NodeLookup
from brain_search.ingest.service import IngestService
from brain_search.mcp.server import REMEMBER_WAIT_S
from brain_search.tenancy.caller import Caller

ToolFn = Callable[[Caller, dict[str, Any]], dict[str, Any]]
ENDED = (TaskState.succeeded, TaskState.failed)


class RememberOptions(BaseModel):
    """`brain_remember`'s options beside the memory's own fields."""

    model_config = ConfigDict(extra="ignore")

    create_nodes: bool = False
    refresh: bool = False
    wait: bool = False


def _not_stored(status: TaskStatus) -> str:
    """Why a write that ended did not leave the memory searchable."""
    if status.failures:
        return "; ".join(f"{f.memory_id}: {f.reason}" for f in status.failures[:3])
    if status.superseded:
        return "a later write or delete of this memory was accepted first"
    return status.error or status.state.value


def waited(ingest: IngestService, tenant_id: str, answer: dict[str, Any], wait_s: float) -> dict[str, Any]:
    """The answer of a write once its task has ended (``searchable: true``), or after ``wait_s``
    (``searchable: false``, saying so). A write that ended without storing the memory is an error."""
    status = ingest.wait(tenant_id, answer["task_id"], wait_s)
    counts = {"state": status.state.value, "indexed": status.indexed, "failed": status.failed}
    if status.state not in ENDED:
        detail = f"still {status.state.value} after {wait_s:.0f} s: searchable once its task ends"
        return {**answer, **counts, "searchable": False, "detail": detail}
    if status.state is TaskState.failed or status.indexed < status.submitted:
        raise BrainSearchError(f"not stored (task {status.task_id}): {cut(_not_stored(status))}")
    return {**answer, **counts, "searchable": True}


def mcp_tools(
    ingest: IngestService, settings: Settings, nodes: NodeLookup, wait_s: float = REMEMBER_WAIT_S
) -> tuple[ToolFn, ToolFn]:
    """`brain_remember` and `brain_forget`."""

    def remember(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        tenant_id = caller.tenant_id
        memory = dict(args)
        options = RememberOptions.model_validate({k: memory.pop(k) for k in RememberOptions.model_fields if k in args})
        body = {"create_nodes": options.create_nodes, "refresh": options.refresh or options.wait, **memory}
        req = caller.write(IngestRequest.model_validate(body))  # one memory: its errors name its fields
        accepted = ingest.accept(tenant_id, req, settings, nodes)
        answer = {**accepted.model_dump(mode="json"), "searchable": False}
        return waited(ingest, tenant_id, answer, wait_s) if options.wait else answer

    def forget(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        tenant_id = caller.writer().tenant_id
        filters = dict(args)
        if "memory_id" in filters:
            memory_id = str(filters.pop("memory_id"))
            owner = {k: filters.pop(k) for k in ("user_id", "agent_id") if k in filters}
            if filters:
                raise InvalidInput(next(iter(filters)), "send memory_id alone (with user_id / agent_id), or filters")
            scope = caller.scope(owner.get("user_id"), owner.get("agent_id"))
            stored = ingest.delete(tenant_id, memory_id, scope)
            return {"memory_id": memory_id, "state": "deleted" if stored else "deleted_before_stored"}
        if "until" in filters:  # a date alone is the end of that day, as over HTTP and in recall
            filters["until"] = end_of_date(filters["until"])
        req = caller.forget(ForgetRequest.model_validate(filters))
        return ingest.forget(tenant_id, req, nodes).model_dump(mode="json")

    return remember, forget


def feedback_tool(feedback: FeedbackService) -> ToolFn:
    """`brain_feedback`: ``recall_id`` (a recall's), ``rating`` 1–5 and/or ``results`` marked."""

    def give(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        body = dict(args)
        recall_id = body.pop("recall_id", None)
        if not isinstance(recall_id, str) or not recall_id:
            raise InvalidInput("recall_id", "the recall_id of a recall's answer is required")
        scope = caller.scope(body.pop("user_id", None), body.pop("agent_id", None))
        answer = feedback.give(caller.tenant_id, recall_id, FeedbackRequest.model_validate(body), scope)
        return answer.model_dump(mode="json")

    return give
