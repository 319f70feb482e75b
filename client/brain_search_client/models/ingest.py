"""The wire models of writing and reading memories: what a client sends (one memory, a batch, a
change) and what the API answers (tasks, stored memories, pages, history, dead letters). The
service's queue models (what a task carries) extend these in ``brain_search/ingest/models.py``."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    field_validator,
    model_validator,
)

from brain_search_client.models.inputs import Text
from brain_search_client.models.memory import (
    MemoryAbout,
    MemoryGiven,
    MemoryStored,
    OwnerId,
)

OPTION_FIELDS = ("chunk", "refresh", "create_nodes", "history")


def content_not_blank(v: str) -> str:
    """``content`` of a write: some non-whitespace text."""
    if not v.strip():
        raise ValueError("content must contain non-whitespace text")
    return v


class MemoryIn(MemoryGiven):
    """One memory as a client sends it (its fields: ``models/memory.py``)."""

    model_config = ConfigDict(extra="forbid")

    _content_not_blank = field_validator("content")(content_not_blank)


class IngestOptions(BaseModel):
    chunk: bool = Field(
        False, description="split content longer than the chunk size into overlapping memories '<id>#<n>'"
    )
    refresh: bool = Field(False, description="read-your-writes: the task completes once its memories are searchable")
    create_nodes: bool = Field(False, description="create nodes named by an unknown label path instead of a 422")


def single_memory(data: Any) -> bool:
    """Whether a write's body is one memory, its fields at the top level (no ``memories``)."""
    return isinstance(data, dict) and "memories" not in data


class MemoryOut(MemoryStored):
    """A stored memory as a read answers it (its fields: ``models/memory.py``)."""

    version: int | None = Field(None, description="the stored version (also the ETag); send it as If-Match")
    superseded_by: str | None = Field(
        None, description="a live memory that supersedes this one (recall leaves this one out); null when none"
    )


class MemoryVersion(BaseModel):
    """An earlier version of a memory, as a PUT or PATCH replaced it."""

    version: int | None
    replaced_by: str = Field(..., description="put | patch")
    replaced_at: datetime
    memory: MemoryOut


MAX_IMPORTED_VERSIONS = 100
"""earlier versions a write may carry per memory (``IngestRequest.history``)"""


class IngestRequest(IngestOptions):
    """A batch (``{"memories": [...]}``) or one memory (its fields at the top level), plus options.
    ``single``: the body was one memory (its errors name ``content``, not ``memories.0.content``)."""

    model_config = ConfigDict(extra="forbid")

    memories: list[MemoryIn] = Field(..., min_length=1)
    user_id: OwnerId | None = Field(None, description="a batch: the user of each memory that names none")
    agent_id: OwnerId | None = Field(None, description="a batch: the agent of each memory that names none")
    history: dict[str, list[MemoryVersion]] | None = Field(
        None,
        description="earlier versions of memories of this write, kept as their history, by memory id (what "
        f"`brain-search export` writes and `import` sends back); at most {MAX_IMPORTED_VERSIONS} per memory",
    )
    _single: bool = PrivateAttr(False)

    @model_validator(mode="wrap")
    @classmethod
    def _single_memory(cls, data: Any, handler: ModelWrapValidatorHandler[IngestRequest]) -> IngestRequest:
        single = single_memory(data)
        if single:
            options = {k: data[k] for k in OPTION_FIELDS if k in data}
            memory = {k: v for k, v in data.items() if k not in OPTION_FIELDS}
            data = {**options, "memories": [memory]}
        request = handler(data)
        request._single = single
        return request

    @property
    def single(self) -> bool:
        return self._single

    def owned(self) -> IngestRequest:
        """The request with the batch's ``user_id`` / ``agent_id`` given to each memory that names
        none (a memory's own wins), and none left at the batch level."""
        if self.user_id is None and self.agent_id is None:
            return self
        memories = [
            m.model_copy(update={"user_id": m.user_id or self.user_id, "agent_id": m.agent_id or self.agent_id})
            for m in self.memories
        ]
        return self.replaced(memories=memories, user_id=None, agent_id=None)

    def replaced(self, **update: Any) -> IngestRequest:
        """A copy with ``update`` applied that keeps whether the body was one memory."""
        out = self.model_copy(update=update)
        out._single = self._single
        return out


class ItemFailure(BaseModel):
    memory_id: str
    reason: str
    status: int | None = Field(None, description="OpenSearch's per-item HTTP status, if it answered")
    error_type: str | None = None
    dead_lettered: bool = False


SUPERSEDED_HELP = "memories not written because a newer version or a delete of them was accepted later"


class TaskState(StrEnum):
    queued = "queued"
    running = "running"
    retrying = "retrying"
    succeeded = "succeeded"  # every memory was either indexed or dead-lettered: see `failed`
    failed = "failed"  # the task itself failed; `error` says why


class TaskAccepted(BaseModel):
    task_id: str
    state: TaskState = TaskState.queued
    submitted: int = Field(..., description="memories queued (after chunking)")
    memory_ids: list[str] = Field(default_factory=list, description="the ids given or derived, in order")


class TaskStatus(BaseModel):
    task_id: str
    state: TaskState
    submitted: int
    indexed: int = 0
    failed: int = 0
    superseded: int = Field(0, description=SUPERSEDED_HELP)
    failures: list[ItemFailure] = Field(default_factory=list)
    error: str | None = None
    created_at: datetime | None = None
    finished_at: datetime | None = Field(None, description="when it succeeded or failed (null while it runs)")


class DeadLetter(BaseModel):
    id: str
    task_id: str
    memory_id: str
    user_id: str | None = None
    agent_id: str | None = None
    reason: str
    status: int | None = None
    error_type: str | None = None
    attempts: int = 1
    payload: dict[str, Any] = Field(..., description="the memory as it was queued")
    created_at: datetime


class DeadLetterPage(BaseModel):
    total: int
    items: list[DeadLetter]


class DeadLettersPurged(BaseModel):
    deleted: int


class DeleteAccepted(BaseModel):
    """A DELETE of a memory that is not stored yet but that an unfinished task carries."""

    memory_id: str
    state: str = "deleted_before_stored"
    detail: str = "the memory is not stored yet; its queued write will not land"


class MemoryHistory(BaseModel):
    memory_id: str
    versions: list[MemoryVersion]


class _MemoryFieldsIn(MemoryAbout):
    """The fields a PUT and a PATCH take, each as a write takes it (``models/memory.py``)."""

    model_config = ConfigDict(extra="forbid")

    content: Text | None = None
    refresh: bool = False
    create_nodes: bool = False


class MemoryReplace(_MemoryFieldsIn):
    """PUT /v1/memories/{id}: the whole new memory, re-embedded; a field it does not name is
    cleared (to change some fields and keep the others: PATCH)."""

    content: Text

    _content_not_blank = field_validator("content")(content_not_blank)


class MemoryPatch(_MemoryFieldsIn):
    """PATCH /v1/memories/{id}: the fields to change; every field it does not name is kept. With
    ``content`` the memory is re-embedded through a task (202); without, it changes at once (200)."""

    content: Text | None = Field(None, description="new text: re-embedded through a task, the other fields kept")
    refresh: bool = Field(False, description="with `content`: the task completes once the new text is searchable")

    @field_validator("content")
    @classmethod
    def _content_stays(cls, v: str | None) -> str:
        if v is None:
            raise ValueError("content cannot be removed: send the new text, or leave content out")
        return content_not_blank(v)


class ReplaceAccepted(TaskAccepted):
    version: int = Field(..., description="the version the new content will be stored with")


class WriteOutcome(TaskStatus):
    """``POST /v1/memories?wait=true``: the write once its task has ended (200: its memories are
    searchable when ``searchable``), or as it stands when the wait ran out (202: poll
    ``GET /v1/tasks/{task_id}``)."""

    memory_ids: list[str] = Field(default_factory=list, description="the ids given or derived, in order")
    searchable: bool = Field(
        False, description="the task succeeded and stored every memory it did not supersede: a recall finds them"
    )


class HistoryPurged(BaseModel):
    deleted: int = Field(..., description="earlier versions deleted")


class MemoryPage(BaseModel):
    memories: list[MemoryOut]
    history: dict[str, list[MemoryVersion]] | None = Field(
        None, description="with `history=true`: each listed memory's earlier versions, newest first, by memory id"
    )
    next_cursor: str | None = Field(None, description="send as `cursor` for the next page; None on the last")
