"""What the sync and the async clients share and that does no I/O: requests built from the shared
models (checked before anything is sent), query strings, path segments, the route each method
calls, and what a waited write means."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote

import pydantic

from brain_search_client.errors import InvalidRequest, WriteFailed
from brain_search_client.models.admin import TenantOut
from brain_search_client.models.ingest import MemoryOut, TaskState, TaskStatus
from brain_search_client.models.memory import EXPORTED_FIELDS

M = TypeVar("M", bound=pydantic.BaseModel)
F = TypeVar("F", bound=Callable[..., Any])
ENDED = (TaskState.succeeded, TaskState.failed)
USER_AGENT = "brain-search-client/0.1"


def route(method: str, path: str) -> Callable[[F], F]:
    """Marks the method that calls ``method path`` (an OpenAPI path), so a test can check that
    every route of the API has one."""

    def mark(fn: F) -> F:
        fn.__brain_route__ = (method.upper(), path)  # type: ignore[attr-defined]
        return fn

    return mark


def routes_of(*objects: object) -> set[tuple[str, str]]:
    """The routes the methods of these objects (and of their resources) call."""
    seen: set[tuple[str, str]] = set()
    for obj in objects:
        for name in dir(type(obj)):
            attr = getattr(type(obj), name, None)
            mark = getattr(attr, "__brain_route__", None)
            if mark is not None:
                seen.add(mark)
        for name, value in vars(obj).items():
            if not name.startswith("_") and hasattr(value, "_t") and value is not obj:
                seen |= routes_of(value)
    return seen


def build(model: type[M], data: Mapping[str, Any]) -> M:
    """``model`` from ``data``, checked here: a value the API would refuse is an
    ``InvalidRequest`` naming the field before anything is sent."""
    try:
        return model.model_validate(dict(data))
    except pydantic.ValidationError as exc:
        errors = [
            {"field": ".".join(str(x) for x in e["loc"]), "message": e["msg"].removeprefix("Value error, ")}
            for e in exc.errors(include_url=False)
        ]
        detail = "; ".join(f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors)
        field = next((e["field"] for e in errors if e["field"]), None)
        raise InvalidRequest(None, detail, errors=errors, field=field) from None


def given(**kw: Any) -> dict[str, Any]:
    """The keyword arguments a caller gave (None: not given)."""
    return {k: v for k, v in kw.items() if v is not None}


def body(model: pydantic.BaseModel) -> dict[str, Any]:
    """A request model as JSON: the fields that were set (a PATCH names only what changes)."""
    return model.model_dump(mode="json", exclude_unset=True)


def params(**kw: Any) -> dict[str, str | int | float]:
    """A query string: None left out, booleans as ``true`` / ``false``, times as ISO 8601."""
    out: dict[str, str | int | float] = {}
    for k, v in kw.items():
        if v is None:
            continue
        if isinstance(v, bool):
            out[k] = "true" if v else "false"
        elif isinstance(v, datetime):
            out[k] = v.isoformat()
        else:
            out[k] = v
    return out


def segment(value: str) -> str:
    """One path segment: every reserved character escaped (a memory id's ``#`` and ``/`` too)."""
    return quote(value, safe="")


def node_path(ref: str) -> str:
    """A node's id or label path in a URL (``Users/omar`` stays a path, each segment escaped)."""
    return "/".join(quote(part, safe="") for part in ref.split("/"))


def if_match(version: int | str | None) -> dict[str, str]:
    return {"If-Match": f'"{version}"'} if version is not None else {}


def all_with_ids(memories: list[Any]) -> bool:
    """A write that can run twice and store the same: every memory names its id."""
    return all(getattr(m, "memory_id", None) for m in memories)


def not_stored(status: TaskStatus) -> str:
    """Why a write that ended did not store its memories."""
    if status.failures:
        return "; ".join(f"{f.memory_id}: {f.reason}" for f in status.failures[:3])
    return status.error or status.state.value


def check_stored(status: TaskStatus) -> None:
    """``WriteFailed`` when a task ended without storing every memory it did not supersede."""
    if status.state is TaskState.failed or status.failed:
        raise WriteFailed(f"task {status.task_id} did not store its memories: {not_stored(status)}", status)


@dataclass
class TenantPage:
    """A page of tenants in id order; ``next_after``: pass it as ``after`` (None: the last page)."""

    tenants: list[TenantOut]
    next_after: str | None


def export_line(memory: MemoryOut, versions: Sequence[Any] = ()) -> dict[str, Any]:
    """One memory as a line an import reads back: every field a write takes, the node by its
    label path (so it can be created in another tenant or deployment), its earlier versions."""
    data = memory.model_dump(mode="json")
    line = {k: data[k] for k in EXPORTED_FIELDS if data.get(k) is not None}
    if data.get("node_path"):
        line["node_id"] = data["node_path"]
    if versions:
        line["history"] = [v.model_dump(mode="json") if hasattr(v, "model_dump") else v for v in versions]
    return line
