"""Conversation context of a recall (spec 5.2: "what was that conversation about…" is a named
entity plus its context): the ranked candidates grouped by conversation, each group scored from
its hits, and the turns around its best hit.

A conversation is a ``conversation_id`` within one node: the turns a client stored with the same
``conversation_id`` and ``node_id`` (a LoCoMo session, a RealMem session, one chat thread).
Memories without a ``conversation_id`` belong to no conversation.

Pure functions: ``retrieval/context.py`` fetches the turns (one ``_msearch``,
``queries.conversation_turns``) and hands the answers back here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CONVERSATION_CUES = frozenset(
    {
        "that_conversation_about",
        "that_conversation_where",
        "find_conversation_where",
        "what_did_we_discuss",
        "conversations_about",
        "discussed_about",
    }
)
"""intent cues (``intent/cues.py``) that ask for a conversation: "what was that conversation
about…", "the chat where…", "what did we discuss…", "when we talked about…"."""

NAMES_A_CONVERSATION = frozenset(
    {"that_conversation_about", "that_conversation_where", "find_conversation_where", "conversations_about"}
)
"""the cues among them that name a conversation ("that conversation about…", "the chat where…",
"conversations with Ana about…")"""

_SPOKEN = re.compile(r"\b(?:conversation|chat|discussion|talk|exchange)s?\b", re.IGNORECASE)


def asks_for_conversation(query: str, cues: Sequence[str]) -> bool:
    """Whether the question asks for a conversation's turns rather than a note (pure): a cue
    that names one, with a word for something spoken ("that email about…" may be a note, and
    "what did I say about…" either)."""
    return bool(NAMES_A_CONVERSATION.intersection(cues)) and _SPOKEN.search(query) is not None


AUTO_CONTEXT = 2
"""turns each side of the best hit when a conversation cue turns the context on"""
MAX_CONVERSATIONS = 10
"""conversations in a response, at most (and at most the request's ``limit``)"""
TURNS_POOL = 40
"""turns fetched per conversation, nearest in time to its best hit: the window is cut from them"""
SUPPORT_WEIGHT = 0.1
"""what each further hit of a conversation adds to its score, times that hit's relevance"""
SUPPORT_HITS = 3
"""further hits counted, at most"""

Key = tuple[str, str | None]
"""(conversation_id, node_id)"""


def conversation_key(source: Mapping[str, Any]) -> Key | None:
    """A memory's conversation: its ``conversation_id`` within its node (None without one)."""
    conv = source.get("conversation_id")
    if not conv:
        return None
    node = source.get("node_id")
    return str(conv), str(node) if node else None


def context_turns(requested: int | None, cues: Sequence[str]) -> int:
    """Turns each side of a conversation's best hit: as requested; when not given,
    ``AUTO_CONTEXT`` if a conversation cue fired, else 0 (no conversations: the default recall)."""
    if requested is not None:
        return requested
    return AUTO_CONTEXT if any(c in CONVERSATION_CUES for c in cues) else 0


@dataclass
class ConversationGroup:
    """One conversation of a recall: its hits (memory ids, best first) and score."""

    key: Key
    hits: list[str]
    score: float
    best: int
    """index of the best hit among the ranked candidates"""
    relevance: list[float] = field(default_factory=list)
    source: Mapping[str, Any] = field(default_factory=dict)
    """the best hit's ``_source``"""


def conversation_score(relevance: Sequence[float]) -> float:
    """A conversation's score from its hits' relevance, best first: the best hit's, plus
    ``SUPPORT_WEIGHT`` × each of the next ``SUPPORT_HITS`` (a conversation where several turns
    match edges out one where a single turn shares a word; one strong hit still leads)."""
    if not relevance:
        return 0.0
    ordered = sorted(relevance, reverse=True)
    return ordered[0] + SUPPORT_WEIGHT * sum(ordered[1 : 1 + SUPPORT_HITS])


def group_conversations(
    sources: Sequence[Mapping[str, Any]],
    relevance: Sequence[float],
    order: Sequence[int],
    limit: int,
) -> list[ConversationGroup]:
    """The conversations of the ranked candidates (``sources`` and ``relevance`` aligned,
    ``order`` best first), best score first (ties: the one whose best hit ranks first), at most
    ``limit``."""
    groups: dict[Key, ConversationGroup] = {}
    for i in order:
        key = conversation_key(sources[i])
        if key is None:
            continue
        mid = str(sources[i].get("memory_id", ""))
        g = groups.get(key)
        if g is None:
            groups[key] = ConversationGroup(key, [mid], 0.0, i, [relevance[i]], sources[i])
        else:
            g.hits.append(mid)
            g.relevance.append(relevance[i])
    rank = {i: r for r, i in enumerate(order)}
    for g in groups.values():
        g.score = conversation_score(g.relevance)
    return sorted(groups.values(), key=lambda g: (-g.score, rank[g.best]))[:limit]


_DIGITS = re.compile(r"(\d+)")


def turn_order(timestamp: str | None, memory_id: str) -> tuple[str, tuple[tuple[int, Any], ...]]:
    """How turns are ordered: by time, then by id with numbers read as numbers (``D3:2`` before
    ``D3:10``: turns stored with one time each keep their order). Untimed turns come first."""
    parts = tuple((0, int(p)) if p.isdigit() else (1, p) for p in _DIGITS.split(memory_id) if p)
    return timestamp or "", parts


def window(turns: Sequence[Mapping[str, Any]], hit_id: str, context: int) -> list[Mapping[str, Any]]:
    """The hit and up to ``context`` turns each side of it, in turn order (``turn_order``);
    ``turns`` are ``_source`` dicts of one conversation. Without the hit among them: the first
    ``2 × context + 1``."""
    ordered = sorted(turns, key=lambda t: turn_order(t.get("timestamp"), str(t.get("memory_id", ""))))
    at = next((i for i, t in enumerate(ordered) if str(t.get("memory_id")) == hit_id), None)
    if at is None:
        return list(ordered[: 2 * context + 1])
    return list(ordered[max(0, at - context) : at + context + 1])
