"""Time relative to an event the tenant's memories name: "before the launch", "since the offsite".

"after the X" is left alone: in questions it is mostly sequence or cause ("how did she feel
after the accident"), answered by what was said about the event itself, not a time scope (on
LoCoMo the only such questions are of that kind; scoped, they lost 0.008 R@10 on test single-hop
and gained nothing on dev).

The words alone say nothing about when the launch was, so the tenant's own memories are asked:
the live memories that name the event (a phrase match on ``content``) and, in their text, say
when it is ("the launch is on March 3", "the launch moved to May"), each read against its own
timestamp. The latest of those statements wins (a later "moved to May" overrides an earlier
"in March"). "before X" then ends at the event's start, "since X" starts there.

When no memory names the event with a date, the query is left alone: no scope, its words stay in
the lexical query. One search, only for queries that hold such a phrase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from opensearchpy import OpenSearch

from brain_search.models import RecallRequest, TimeRange
from brain_search.retrieval.engine import queries
from brain_search.retrieval.question.timewords import OutOfCalendar, blank_out, find, time_scope
from brain_search.store.scope import TenantScope

_EVENT = re.compile(
    r"\b(before|since)\s+((?:the|our|my|his|her|their|your)\s+[a-z][\w-]*(?:\s+[a-z][\w-]*)?)",
    re.IGNORECASE,
)
_DETERMINER = re.compile(r"^(?:the|our|my|his|her|their|your)\s+", re.IGNORECASE)
_STOP_AFTER = re.compile(r"\s+(?:and|or|with|about|of|on|in|at|for|to|when|was|is|did|do|we|i|you|they)\b.*$")
MAX_STATEMENTS = 20


@dataclass(frozen=True)
class EventMention:
    lead: str  # before | since
    words: str  # as written: "before the launch"
    event: str  # "launch"


def mention(query: str) -> EventMention | None:
    """The first "before/since the <event>" of the query (pure)."""
    m = _EVENT.search(query)
    if not m:
        return None
    phrase = _STOP_AFTER.sub("", m.group(2).rstrip("?!.,"))
    event = _DETERMINER.sub("", phrase).strip()
    if not event:
        return None
    words = query[m.start(1) : m.start(2)] + phrase
    return EventMention(lead=m.group(1).lower(), words=words, event=event)


def stated_time(hits: list[dict[str, Any]], event: str) -> tuple[datetime, datetime] | None:
    """[start, end) of the event as the latest memory that dates it says (pure over hits)."""
    dated = []
    for h in hits:
        src = h.get("_source", {})
        said = src.get("timestamp")
        text = src.get("content") or ""
        if not said or event.lower() not in text.lower():
            continue
        when = datetime.fromisoformat(str(said).replace("Z", "+00:00"))
        try:
            found = find(text, when, prefer="current_period", asked=False)
        except OutOfCalendar:
            continue  # a memory dated at the calendar's edge dates no event
        if found is None or found.since is None:
            continue
        end = found.until + timedelta(microseconds=1) if found.until is not None else found.since
        dated.append((when, found.since, end))
    if not dated:
        return None
    _, start, end = max(dated, key=lambda d: d[0])
    return start, end


def event_scope(client: OpenSearch, scope: TenantScope, query: str, phrases: tuple[str, ...]) -> TimeRange | None:
    """The scope of "before/since the <event>" where a memory of the tenant (of its user: a
    user's recall is dated by their own memories only) dates the event."""
    m = mention(blank_out(query, phrases))  # quoted phrases are words to find, not time
    if m is None:
        return None
    body = queries.event_statements(scope, m.event, MAX_STATEMENTS)
    r = client.search(index=scope.index, body=body, params=scope.params())
    span = stated_time(r["hits"]["hits"], m.event)
    if span is None:
        return None
    start, _ = span
    since, until = (None, start - timedelta(microseconds=1)) if m.lead == "before" else (start, None)
    return TimeRange(since=since, until=until, source="event", words=[m.words])


def recall_period(
    client: OpenSearch, scope: TenantScope, req: RecallRequest, phrases: tuple[str, ...], *, after: timedelta
) -> TimeRange | None:
    """The period a recall reads: the request's since/until and its time words
    (``timewords.time_scope``; ``after``: how long after the period words name a memory may have
    been said), else, with time words on and no since/until, the event the question is before or
    since (``event_scope``: one search); None: any time."""
    when = time_scope(
        req.query,
        phrases,
        req.since,
        req.until,
        reference_time=req.reference_time,
        read_words=req.time_words,
        after=after,
    )
    if when is None and req.time_words and req.since is None and req.until is None:  # "before the launch"
        when = event_scope(client, scope, req.query, phrases)
    return when
