"""Session-level recall (issue 42, item 5): is the conversation a question's evidence was said in
among the first k conversations a recall names?

A session is a memory's ``(conversation_id, node_id)``: a LoCoMo session (node
``conv-26/session_3``) or a RealMem session (its uuid). Before conversation context, a user read
the sessions off the flat results (``sessions_of_results``: each result's session, first seen
first); with it, the response's ``conversations`` list is the ranking (``sessions_of_conversations``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from brain_lab.eval.datasets import Dataset, EvalQuery
from brain_search.models import RecallResponse

Session = tuple[str, str | None]


def session_index(dataset: Dataset) -> dict[tuple[str, str], Session]:
    """(tenant, memory id) → the memory's session, for memories that have a conversation."""
    return {
        (tenant, m.memory_id): (m.conversation_id, m.node_id)
        for tenant, mems in dataset.memories.items()
        for m in mems
        if m.conversation_id
    }


def relevant_sessions(query: EvalQuery, index: Mapping[tuple[str, str], Session]) -> set[Session]:
    """The sessions of the query's evidence turns (empty: none has a session)."""
    return {index[(query.tenant_id, m)] for m in query.relevant if (query.tenant_id, m) in index}


def distinct(sessions: Iterable[Session | None]) -> list[Session]:
    """Sessions in order, each at its first place, without the unknown ones."""
    return list(dict.fromkeys(s for s in sessions if s is not None))


def sessions_of_results(
    resp: RecallResponse, tenant: str, index: Mapping[tuple[str, str], Session], k: int = 10
) -> list[Session]:
    """The sessions of the top-``k`` flat results, first seen first (what a reader of the list had)."""
    return distinct(index.get((tenant, r.id)) for r in resp.results[:k])


def sessions_of_conversations(resp: RecallResponse) -> list[Session]:
    """The response's conversations, best first."""
    return distinct((c.conversation_id, c.node.id) for c in resp.conversations or [])


def hit_at(ranked: Sequence[Session], relevant: set[Session], k: int) -> float:
    """1 when one of the relevant sessions is among the first ``k``."""
    return 1.0 if relevant & set(ranked[:k]) else 0.0


def recall_at(ranked: Sequence[Session], relevant: set[Session], k: int) -> float:
    """Share of the relevant sessions among the first ``k``."""
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0
