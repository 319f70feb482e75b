"""The API's request and response models: one definition, shared by the service (which imports
them from here) and by this client. ``recall``: the recall's request and response; ``memory``: a
memory's schema; ``ingest``: writes, reads, tasks; ``forget``; ``nodes``; ``feedback``;
``admin``: tenants, keys, usage; ``inputs``: the types every door takes."""

from __future__ import annotations

from brain_search_client.models.admin import KeyInfo, KeyOut, TenantLanguages, TenantOut, TenantsCreated, Usage
from brain_search_client.models.feedback import FeedbackAnswer, FeedbackSummary
from brain_search_client.models.forget import ForgetStatus, UserForgotten
from brain_search_client.models.ingest import (
    DeleteAccepted,
    MemoryHistory,
    MemoryIn,
    MemoryOut,
    MemoryPage,
    ReplaceAccepted,
    TaskAccepted,
    TaskState,
    TaskStatus,
    WriteOutcome,
)
from brain_search_client.models.nodes import MoveResult, Neighborhood, Node, NodeList, TaskInfo
from brain_search_client.models.recall import Focus, MemoryResult, RecallRequest, RecallResponse, ZFormula

__all__ = [
    "DeleteAccepted",
    "FeedbackAnswer",
    "FeedbackSummary",
    "Focus",
    "ForgetStatus",
    "KeyInfo",
    "KeyOut",
    "MemoryHistory",
    "MemoryIn",
    "MemoryOut",
    "MemoryPage",
    "MemoryResult",
    "MoveResult",
    "Neighborhood",
    "Node",
    "NodeList",
    "RecallRequest",
    "RecallResponse",
    "ReplaceAccepted",
    "TaskAccepted",
    "TaskInfo",
    "TaskState",
    "TaskStatus",
    "TenantLanguages",
    "TenantOut",
    "TenantsCreated",
    "Usage",
    "UserForgotten",
    "WriteOutcome",
    "ZFormula",
]
