"""The wire models of forgetting: what ``POST /v1/forget`` takes and what it and
``GET /v1/forget/{task_id}`` answer (also ``DELETE /v1/users/{user_id}``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from brain_search_client.models.inputs import EngineTime, EngineUntil, Text
from brain_search_client.models.memory import OwnerId


class ForgetRequest(BaseModel):
    """What to forget. Filters combine (AND); none at all needs ``all: true``. ``until`` as a date
    alone is the end of that day, as in recall, `GET /v1/memories` and the CLI
    (``"until": "2026-02-28"`` forgets the 28th too)."""

    model_config = ConfigDict(extra="forbid")

    conversation_id: Text | None = Field(None, max_length=256)
    node: Text | None = Field(None, description="node id or label path: its whole subtree")
    source: Text | None = Field(None, max_length=100)
    since: EngineTime | None = Field(None, description="memories whose timestamp is at or after this")
    until: EngineUntil | None = Field(None, description="memories at or before this (a date alone: to its end)")
    all: bool = Field(False, description="required to forget every memory of the tenant (or of the user)")
    user_id: OwnerId | None = Field(None, description="only this user's memories; with `all`: forget the user")
    agent_id: OwnerId | None = Field(None, description="only this agent's memories")

    @property
    def unfiltered(self) -> bool:
        """No filter but the owner: every memory of the tenant, or of the user (or agent)."""
        return all(f is None for f in (self.conversation_id, self.node, self.source, self.since, self.until))


class ForgetStatus(BaseModel):
    task_id: str
    state: Literal["running", "succeeded", "failed"] = "running"
    memories: int = Field(0, description="memories (and pieces) deleted so far")
    history: int = 0
    dead_letters: int = 0
    task_records: int = 0
    copies: int = Field(0, description="copies deleted from indices that do not serve the tenant (kept for rollback)")
    feedback: int = Field(0, description="forgetting a user: the records of their recalls deleted")
    error: str | None = None
    created_at: datetime
    finished_at: datetime | None = None


class UserForgotten(ForgetStatus):
    """The forget of a user as it starts: its task, and the user's keys deleted."""

    keys: int = Field(0, description="keys held to the user, deleted (they are refused from now on)")
