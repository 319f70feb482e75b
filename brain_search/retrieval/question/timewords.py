"""Time in words: "last week", "yesterday", "in January", "since March 3", "two days ago".

``find(query, reference_time)`` reads the query's time expressions relative to the reference
time and returns the since/until they mean, with the words that said it (they leave the
lexical query: no memory says "last week" about the day it was written).

Parsing is dateparser's (``search_dates`` finds the expressions, ``DateDataParser`` tells their
period: day, week, month or year). It is kept up to date, knows relative forms ("3 weeks ago",
"last Monday") and absolute ones ("5/3", "July 2022") in many languages; a hand-made regex table
would have to learn each of those. Its search is generous ("we", "may", "53%" read as dates), so
an expression counts only when it holds a time word of ``_TIME_WORD`` or a written date, and the
month "may" only after a preposition or beside a number.

A period becomes a range: a day, the week (Monday to Sunday) holding the date, the calendar
month or the year, and runs on ``after`` past its end (the setting ``time_words_after_days``,
3: what happened is told after it happened; on LoCoMo dev it lifted the temporal questions' R@10
from 0.765 to 0.784). "since/after/from X" runs from X's start to the reference time, "before X"
ends at X's start, "until/till/by X" at X's end; "between X and Y" spans both. When the query
holds absolute dates and relative ones ("the last week of August 2023"), the absolute ones win.
Nothing here reads the engine: "before the launch" is ``events.py``'s, dated by the memories.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from brain_search.errors import InvalidInput
from brain_search.models import TimeRange
from brain_search.retrieval.intent.lexicon import STATEMENT_OPENERS

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_TIME_WORD = re.compile(
    rf"\b(?:{_MONTHS}|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"yesterday|today|tonight|tomorrow|ago|week|weeks|weekend|month|months|year|years|"
    r"fortnight|days?)\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b\d{4}-\d{2}-\d{2}\b|\b(?:19|20)\d{2}\b",
    re.IGNORECASE,
)
_BEFORE = (
    "in",
    "on",
    "since",
    "before",
    "after",
    "during",
    "from",
    "until",
    "till",
    "by",
    "of",
    "between",
    "and",
    "to",
)
_OPENS = ("since", "after")  # X .. reference time ("from January" is January: a period)
_ENDS_AT_START = ("before",)
_ENDS_AT_END = ("until", "till", "by")
_RELATIVE = re.compile(r"\b(?:ago|last|this|next|past|previous|yesterday|today|tonight|tomorrow)\b", re.IGNORECASE)
_DURATION = re.compile(
    r"^\W*(?:(?:for|about|over|of|in|within)\s+)?(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve|few|couple of|several|\d+)\s+(?:days?|weeks?|months?|years?|fortnights?|weekends?)\b",
    re.IGNORECASE,
)
"""an amount of time ("a week", "two days", "for 7 weeks"), not a time (unless it says "ago")"""
_ABSOLUTE = re.compile(
    rf"\b(?:{_MONTHS}|(?:19|20)\d{{2}}|\d{{1,2}}(?:st|nd|rd|th)?)\b|\b\d{{1,2}}/\d{{1,2}}\b", re.IGNORECASE
)
"""a written date (a month, a year, a day of the month, a numeric date): it names a time whatever
the sentence"""
_ASKS_PAST = re.compile(
    r"\b(?:did|was|were|had|said|say|told|tell|talked|talk|mentioned|discussed|decided|wrote|asked|shared|went|"
    r"happened|ago|last|earlier|previous|previously|recent|recently|yesterday|before|since)\b",
    re.IGNORECASE,
)
"""words of a question about what was said or done: a relative time ("today", "on Friday") scopes
only such a sentence; in "I have a deadline on Friday" or "today I want to plan" it is talk of now"""
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")
"""a sentence: up to its closing punctuation or line break"""


@dataclass(frozen=True)
class _Sentence:
    start: int
    end: int
    text: str

    @property
    def asks(self) -> bool:
        """A question ("... in May?") or a request to recall ("Show me what we said last week")."""
        text = self.text.strip().strip("\"'“”‘’()*")
        first = re.split(r"[\s,]+", text, maxsplit=1)[0].lower() if text else ""
        return text.endswith("?") or first in STATEMENT_OPENERS


def sentences(text: str) -> list[_Sentence]:
    """The sentences of ``text`` with where each stands (pure)."""
    return [_Sentence(m.start(), m.end(), m.group()) for m in _SENTENCE.finditer(text) if m.group().strip()]


def _sentence_at(parts: Sequence[_Sentence], pos: int) -> _Sentence | None:
    return next((p for p in parts if p.start <= pos < p.end), None)


@dataclass(frozen=True)
class TimeWords:
    since: datetime | None
    until: datetime | None
    words: tuple[str, ...]
    """the expressions found, as written in the query (prepositions included)"""


@dataclass(frozen=True)
class _Found:
    text: str  # as written, with its leading preposition when there is one
    lead: str  # that preposition ("" when none)
    start: datetime
    end: datetime
    relative: bool


_parsers: dict[str, Any] = {}
_lock = threading.Lock()


def _dateparser() -> tuple[Any, Any]:
    """dateparser's search and parser, imported on first use (about 0.1 s, and never at import)."""
    with _lock:
        if not _parsers:
            from dateparser.date import DateDataParser
            from dateparser.search import search_dates

            _parsers["search"] = search_dates
            _parsers["parser"] = lambda settings: DateDataParser(languages=["en"], settings=settings)
    return _parsers["search"], _parsers["parser"]


def _settings(reference: datetime, prefer: str) -> dict[str, Any]:
    return {"RELATIVE_BASE": reference, "PREFER_DATES_FROM": prefer, "RETURN_AS_TIMEZONE_AWARE": False}


def period_range(day: datetime, period: str) -> tuple[datetime, datetime]:
    """The [start, end) of the day, week (Monday first), month or year holding ``day`` (pure)."""
    d = day.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "week":
        start = d - timedelta(days=d.weekday())
        return start, start + timedelta(days=7)
    if period == "month":
        start = d.replace(day=1)
        nxt = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
        return start, nxt
    if period == "year":
        return d.replace(month=1, day=1), d.replace(year=d.year + 1, month=1, day=1)
    return d, d + timedelta(days=1)


def _counts(text: str, lead: str) -> bool:
    """Whether an expression dateparser found is one a person meant as time."""
    if not _TIME_WORD.search(text):
        return False
    if re.fullmatch(r"(?:in |on |of |from )?(?:the )?may", text.strip(), re.IGNORECASE):
        # "may" is mostly the verb: a month only after a preposition ("in May"), never alone
        return bool(lead) or text.strip().lower().startswith(("in ", "on ", "of ", "from "))
    if re.fullmatch(r"(?:19|20)\d{2}", text.strip()):
        return bool(lead)  # "in 2022", not "2022 revenue"
    return True


def _lead_of(query: str, pos: int, text: str) -> tuple[str, int]:
    """The preposition written before the expression (or at its start) and where it begins."""
    first = text.split(" ", 1)[0].lower()
    if first in _BEFORE:
        return first, pos
    m = re.search(r"(\b[A-Za-z]+)\s+$", query[:pos])
    if m and m.group(1).lower() in _BEFORE:
        return m.group(1).lower(), m.start(1)
    return "", pos


class OutOfCalendar(ValueError):
    """The words name a period that runs past year 9999 or before year 1 of ``reference``."""

    def __init__(self, reference: datetime) -> None:
        super().__init__(f"time words read against {reference.date().isoformat()} name a period outside years 1-9999")
        self.reference = reference


def _found(query: str, reference: datetime, prefer: str, asked: bool = True) -> list[_Found]:
    """The time expressions of ``query``; ``asked`` (a recall's query): only those that name a
    time to recall: not an amount of time, not a time after ``reference``, a relative one only in
    a sentence about the past, and, in a query of several sentences (a chat message: "It's
    Monday morning, and ... What should we focus on now?"), only one in a sentence that asks."""
    search, parser = _dateparser()
    naive = reference.astimezone(UTC).replace(tzinfo=None)
    settings = _settings(naive, prefer)
    spans: list[tuple[int, int]] = []  # where each hit stands; neighbours ("March" "2023") merged
    cursor = 0
    try:
        hits = search(query, languages=["en"], settings=settings) or []
    except (OverflowError, ValueError) as exc:
        raise OutOfCalendar(reference) from exc
    for text, _ in hits:
        pos = query.find(text, cursor)
        if pos < 0:
            continue
        cursor = pos + len(text)
        if spans and not query[spans[-1][1] : pos].strip(" ,"):
            spans[-1] = (spans[-1][0], cursor)
        else:
            spans.append((pos, cursor))
    out: list[_Found] = []
    parts = sentences(query)
    for pos, cursor in spans:
        text = query[pos:cursor]
        lead, begin = _lead_of(query, pos, text)
        if not _counts(text, lead):
            continue
        sentence = _sentence_at(parts, pos)
        said = sentence.text if sentence is not None else query
        if asked and len(parts) > 1 and sentence is not None and not sentence.asks:
            continue  # a message of several sentences: only the one that asks scopes the recall
        words = text.split(" ", 1)
        core = words[1] if len(words) > 1 and words[0].lower() in _BEFORE else text
        try:
            data = parser(settings).get_date_data(core)
            if data.date_obj is None:
                continue
            when, period = data.date_obj, data.period or "day"
            start, end = period_range(when, period)
        except (OverflowError, ValueError) as exc:
            raise OutOfCalendar(reference) from exc
        if not asked:
            pass
        elif _DURATION.match(text) and "ago" not in text.lower():
            continue  # "a week", "two days": how long, not when
        elif start.replace(tzinfo=UTC) > reference:
            continue  # tomorrow, next week: nothing was said then yet
        elif not _ABSOLUTE.search(core) and not _ASKS_PAST.search(said):
            continue  # "today", "on Friday" in talk of now or of plans: not a time to recall
        out.append(
            _Found(
                text=query[begin:cursor],
                lead=lead,
                start=start.replace(tzinfo=UTC),
                end=end.replace(tzinfo=UTC),
                relative=bool(_RELATIVE.search(text)),
            )
        )
    return out


def find(
    query: str,
    reference_time: datetime,
    prefer: str = "past",
    after: timedelta = timedelta(0),
    *,
    asked: bool = True,
) -> TimeWords | None:
    """The time range the query's words mean relative to ``reference_time`` (None: no time words).

    ``prefer``: a bare "January" in a question is the last one ("past"); in a statement ("the
    launch moved to May") it is this year's ("current_period"). ``after``: a period ("last week",
    "on 9 July") runs on this long past its end (never past the reference time), since what
    happened is told after it happened; "before"/"until" bounds stay exact. ``asked``: the text
    is a recall's query (``_found`` keeps only times to recall); False: a memory's own words."""
    ref = reference_time if reference_time.tzinfo else reference_time.replace(tzinfo=UTC)
    if not _TIME_WORD.search(query):
        return None  # most queries: no dateparser at all
    found = _found(query, ref, prefer, asked)
    if not found:
        return None
    absolute = [f for f in found if not f.relative]
    used = absolute or found
    lead = used[0].lead
    start = min(f.start for f in used)
    end = max(f.end for f in used)
    since: datetime | None
    until: datetime | None
    if lead in _OPENS and len(used) == 1:
        since, until = start, ref
    elif lead in _ENDS_AT_START:
        since, until = None, start
    elif lead in _ENDS_AT_END:
        since, until = None, end
    else:
        since, until = start, min(_plus(end, after), ref) if start <= ref else _plus(end, after)
    until = until - timedelta(microseconds=1) if until is not None and until != ref else until
    return TimeWords(since=since, until=until, words=tuple(f.text for f in found))


def _plus(t: datetime, delta: timedelta) -> datetime:
    """``t + delta``, at most the calendar's last instant (a period that ends in year 9999)."""
    try:
        return t + delta
    except OverflowError:
        return datetime.max.replace(tzinfo=t.tzinfo)


def blank_out(text: str, words: Sequence[str]) -> str:
    """``text`` with each of ``words`` (any case) replaced by a space (pure)."""
    out = text
    for w in words:
        out = re.sub(re.escape(w), " ", out, flags=re.IGNORECASE)
    return out


def without_words(text: str, words: tuple[str, ...]) -> str:
    """``text`` with the time expressions taken out, spaces tidied (pure)."""
    return re.sub(r"\s+", " ", blank_out(text, words)).strip()


def time_scope(
    query: str,
    phrases: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    *,
    reference_time: datetime | None,
    read_words: bool = True,
    after: timedelta = timedelta(0),
) -> TimeRange | None:
    """A recall's time scope: the query's time words (outside its quoted phrases, which are words
    to find) read against ``reference_time`` (default now), within an explicit since/until when the
    request has one; the explicit range alone when the words name no time or a time outside it."""
    explicit = TimeRange(since=since, until=until, source="request") if since or until else None
    if not read_words:
        return explicit
    ref = reference_time or datetime.now(UTC)
    try:
        found = find(blank_out(query, phrases), ref, after=after)
    except OutOfCalendar as exc:
        raise InvalidInput(
            "reference_time", f"{exc}: send a reference time nearer today, or time_words: false"
        ) from None
    if found is None:
        return explicit
    lo = max((_aware(t) for t in (since, found.since) if t is not None), default=None)
    hi = min((_aware(t) for t in (until, found.until) if t is not None), default=None)
    if explicit is not None and lo is not None and hi is not None and lo > hi:
        return explicit
    return TimeRange(since=lo, until=hi, source="words", words=list(found.words), reference_time=ref)


def _aware(t: datetime) -> datetime:
    """A naive time is UTC (as the reference time is read)."""
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)
