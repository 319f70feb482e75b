"""What a task carries (the queue's models): the service's own edges of ingestion. The wire
models a client sends and the API answers are defined once in the client package
(``brain_search_client.models.ingest``) and named here for the service."""

from __future__ import annotations

from brain_search_client.models.ingest import (
    MAX_IMPORTED_VERSIONS,
    OPTION_FIELDS,
    SUPERSEDED_HELP,
    DeadLetter,
    DeadLetterPage,
    DeadLettersPurged,
    DeleteAccepted,
    HistoryPurged,
    IngestOptions,
    IngestRequest,
    ItemFailure,
    MemoryHistory,
    MemoryIn,
    MemoryOut,
    MemoryPage,
    MemoryPatch,
    MemoryReplace,
    MemoryVersion,
    ReplaceAccepted,
    TaskAccepted,
    TaskState,
    TaskStatus,
    WriteOutcome,
    content_not_blank,
    single_memory,
)
from brain_search_client.models.memory import MEMORY_ID_PATTERN, MemoryQueued
from pydantic import BaseModel, Field, model_validator

__all__ = [
    "MAX_IMPORTED_VERSIONS",
    "MEMORY_ID_PATTERN",
    "OPTION_FIELDS",
    "SUPERSEDED_HELP",
    "DeadLetter",
    "DeadLetterPage",
    "DeadLettersPurged",
    "DeleteAccepted",
    "HistoryPurged",
    "IngestJob",
    "IngestOptions",
    "IngestRequest",
    "ItemFailure",
    "JobResult",
    "MemoryHistory",
    "MemoryIn",
    "MemoryItem",
    "MemoryOut",
    "MemoryPage",
    "MemoryPatch",
    "MemoryReplace",
    "MemoryVersion",
    "Progress",
    "ReplaceAccepted",
    "TaskAccepted",
    "TaskState",
    "TaskStatus",
    "WriteOutcome",
    "content_not_blank",
    "single_memory",
]


class MemoryItem(MemoryQueued):
    """A validated memory as a task carries it (its fields: ``models/memory.py``), and how an
    edit is written."""

    if_version: int | None = Field(
        None,
        description="an edit (PUT, text PATCH): written only while the memory's version is still the one its "
        "claim stored (external version + 1), in whichever index the memory lives by then",
    )
    if_seq_no: int | None = Field(None, description="an edit queued by an API before if_version (same meaning)")
    if_primary_term: int | None = None


class Progress(BaseModel):
    """What earlier attempts of a job achieved (carried across task retries)."""

    indexed: int = 0
    failed: int = 0
    superseded: int = 0
    failures: list[ItemFailure] = Field(default_factory=list)


class IngestJob(BaseModel):
    """The payload of one ingest task."""

    task_id: str
    tenant_id: str
    items: list[MemoryItem]
    refresh: bool = False
    submitted: int = Field(default=0, description="memories in the original job (retries carry fewer items)")
    attempt: int = 0
    step: int = Field(0, description="messages this job has been carried by before (retries and continuations)")
    progress: Progress = Field(default_factory=Progress)
    version: int | None = Field(
        None,
        description="acceptance version of every write of this job, stamped by IngestService.write "
        "(ingest/versions.py); None only for a job built outside it (tests), whose writes deletes do not order",
    )

    @model_validator(mode="after")
    def _default_submitted(self) -> IngestJob:
        if not self.submitted:
            self.submitted = len(self.items)
        return self


class JobResult(BaseModel):
    submitted: int
    indexed: int
    failed: int
    superseded: int = Field(0, description=SUPERSEDED_HELP)
    failures: list[ItemFailure] = Field(default_factory=list, description="at most 100 are listed")
    attempts: int = 1

    @classmethod
    def so_far(cls, progress: Progress, *, submitted: int, attempts: int) -> JobResult:
        """The counts ``progress`` adds up to after ``attempts`` (a task that ended, or one that waits)."""
        return cls(
            submitted=submitted,
            indexed=progress.indexed,
            failed=progress.failed,
            superseded=progress.superseded,
            failures=progress.failures,
            attempts=attempts,
        )
