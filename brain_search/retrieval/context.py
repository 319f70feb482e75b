"""The conversations of a recall with their turns (``RecallRequest.context``): one ``_msearch``,
one sub-search per conversation (``queries.conversation_turns``), turned into response models.
Which conversations and which turns: ``score/conversations.py`` (pure, no engine call); this
module is its engine side, run at the respond stage, only when the request asks for context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from opensearchpy import OpenSearch

from brain_search.models import ConversationContext, ConversationTurn, NodeRef, RecallRequest
from brain_search.retrieval.engine import queries
from brain_search.retrieval.engine.candidates import Ranked
from brain_search.retrieval.engine.shards import complete
from brain_search.retrieval.engine.sources import fill_sources
from brain_search.retrieval.engine.supersede import complete_answer, superseded_by
from brain_search.retrieval.score.conversations import (
    MAX_CONVERSATIONS,
    TURNS_POOL,
    ConversationGroup,
    context_turns,
    group_conversations,
    window,
)
from brain_search.store.scope import TenantScope

if TYPE_CHECKING:
    from brain_search.retrieval.plan import SearchPlan


def superseded_ids(answer: dict[str, Any] | None) -> list[str]:
    """The memory ids the tenant's superseding memories name (a recall's ``superseders``
    sub-search; none when it did not hold them all)."""
    pairs = [superseded_by(h) for h in complete_answer(answer) or []]
    return sorted({old for newer, olds in pairs for old in olds if old != newer})


def recall_conversations(
    client: OpenSearch,
    payload: Callable[[list[dict[str, Any]]], str],
    plan: SearchPlan,
    ranked: Ranked,
    *,
    req: RecallRequest,
    superseders: dict[str, Any] | None,
) -> list[ConversationContext] | None:
    """A recall's ``conversations``: None when the context is off (``context_turns``: no round
    trip), none when nothing matched, else the conversations of the ranked candidates that clear the
    relevance floor, with their turns (a turn below the floor offers no conversation).
    ``plan``: the recall's ``SearchPlan`` (its scope, its intent's cues and its filters);
    ``payload``: bodies → the ``_msearch`` NDJSON."""
    context = context_turns(req.context, plan.intent.cues)
    if context == 0:
        return None
    n, sources = min(req.limit, MAX_CONVERSATIONS), [c.source for c in ranked.cands]
    matches = [i for i in ranked.order if ranked.shown[i]]  # a conversation is offered for a turn that matches
    found = group_conversations(sources, ranked.relevance, matches, n) if matches else []
    hidden = [] if req.include_superseded else superseded_ids(superseders)
    return conversation_contexts(
        client,
        plan.scope,
        payload,
        plan.filters,
        groups=found,
        context=context,
        hidden=hidden,
        allow_partial=req.allow_partial,
    )


def conversation_contexts(
    client: OpenSearch,
    scope: TenantScope,
    payload: Callable[[list[dict[str, Any]]], str],
    filters: list[dict[str, Any]],
    *,
    groups: list[ConversationGroup],
    context: int,
    hidden: Sequence[str],
    allow_partial: bool,
) -> list[ConversationContext]:
    """The conversations of ``groups`` with the turns around each one's best hit: one
    ``_msearch`` of one sub-search per conversation, under the recall's own filters."""
    if not groups:
        return []
    bodies = []
    for g in groups:
        around = g.source.get("timestamp")
        bodies.append(queries.conversation_turns(filters, g.key[0], g.key[1], around, size=TURNS_POOL, hidden=hidden))
    resp = client.msearch(body=payload(bodies), index=scope.index)
    answers = [complete(answer, allow_partial)[0]["hits"] for answer in resp["responses"]]
    fill_sources(client, scope, [hits["hits"] for hits in answers])
    out = []
    for g, hits in zip(groups, answers, strict=True):
        best = g.source
        best_id = str(best.get("memory_id", ""))
        matched = set(g.hits)
        turns = [
            ConversationTurn(
                id=str(t.get("memory_id")),
                content=t.get("content", ""),
                timestamp=t.get("timestamp"),
                hit=str(t.get("memory_id")) in matched,
            )
            for t in window([h["_source"] for h in hits["hits"]], best_id, context)
        ]
        out.append(
            ConversationContext(
                conversation_id=g.key[0],
                node=NodeRef(id=best.get("node_id"), label=best.get("node_path")),
                score=round(g.score, 6),
                hits=g.hits,
                best_hit=best_id,
                turns=turns,
                turns_total=int(hits["total"]["value"]),
            )
        )
    return out
