"""Time in words read against a reference time (pure: dateparser, no engine)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from brain_search.retrieval.question.timewords import find, period_range, time_scope, without_words

REF = datetime(2023, 10, 20, 14, 0, tzinfo=UTC)  # a Friday


def _day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def _end(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 23, 59, 59, 999999, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "since", "until"),
    [
        ("what did I say last week", _day(2023, 10, 9), _end(2023, 10, 15)),
        ("what did we decide yesterday", _day(2023, 10, 19), _end(2023, 10, 19)),
        ("notes in January", _day(2023, 1, 1), _end(2023, 1, 31)),
        ("since March 3", _day(2023, 3, 3), REF),
        ("two days ago what happened", _day(2023, 10, 18), _end(2023, 10, 18)),
        ("before March 2023", None, _end(2023, 2, 28)),
        ("until June 5", None, _end(2023, 6, 5)),
        ("between March and May 2023", _day(2023, 3, 1), _end(2023, 5, 31)),
        ("where did Joanna travel to in July 2022?", _day(2022, 7, 1), _end(2022, 7, 31)),
        ("what happened in May", _day(2023, 5, 1), _end(2023, 5, 31)),
        ("what did we ship this year", _day(2023, 1, 1), REF),
        # absolute dates win over the relative words that qualify them
        ("where was Jolene during the last week of August 2023?", _day(2023, 8, 1), _end(2023, 8, 31)),
    ],
)
def test_time_words_become_since_and_until(query: str, since: datetime | None, until: datetime | None) -> None:
    found = find(query, REF)
    assert found is not None, query
    assert (found.since, found.until) == (since, until), query


@pytest.mark.parametrize(
    "query",
    [
        "I may have said 53% equity",  # "may" the verb, "53%" no year
        "May I ask about the budget",
        "2022 revenue numbers",  # a bare year is a number, not a time scope
        "When did Caroline go to the adoption meeting?",
        "before the launch",  # an event, not a date: left alone (nothing here reads the engine)
        "The conversation about Jacob's CTO offer",
        "we talked about it",
    ],
)
def test_no_time_words_no_scope(query: str) -> None:
    assert find(query, REF) is None


def test_the_words_leave_the_text() -> None:
    found = find("what did I say about pricing last week", REF)
    assert found is not None and found.words == ("last week",)
    assert without_words("say pricing last week", found.words) == "say pricing"


def test_explicit_since_or_until_bounds_the_words_and_quotes_are_words_to_find() -> None:
    explicit = time_scope(
        "what did I say about pricing", (), _day(2020, 1, 1), None, reference_time=REF
    )  # no time words
    assert explicit is not None and explicit.source == "request" and explicit.words == []
    assert explicit.since == _day(2020, 1, 1) and explicit.until is None
    alone = time_scope("what did I say last week", (), None, None, reference_time=REF)
    assert alone is not None and alone.since is not None and alone.until is not None
    # the words within the explicit range: "last week" up to an explicit until inside it
    cap = alone.since + (alone.until - alone.since) / 2
    both = time_scope("what did I say last week", (), _day(2020, 1, 1), cap, reference_time=REF)
    assert both is not None and both.source == "words" and (both.since, both.until) == (alone.since, cap)
    # words that name a time outside the explicit range leave the explicit range alone
    outside = time_scope("what did I say last week", (), None, _day(2020, 1, 1), reference_time=REF)
    assert outside is not None and outside.source == "request" and outside.until == _day(2020, 1, 1)
    assert (
        time_scope("what did I say last week", (), _day(2020, 1, 1), None, reference_time=REF, read_words=False)
        == explicit
    )
    assert time_scope("find 'last week' in my notes", ("last week",), None, None, reference_time=REF) is None
    assert time_scope("what did I say last week", (), None, None, reference_time=REF, read_words=False) is None
    words = time_scope("what did I say last week", (), None, None, reference_time=REF)
    assert words is not None and words.source == "words" and words.reference_time == REF


def test_naive_reference_time_is_utc() -> None:
    found = find("yesterday", datetime(2023, 10, 20, 14, 0))
    assert found is not None and found.since == _day(2023, 10, 19)


def test_period_ranges() -> None:
    assert period_range(datetime(2023, 12, 14, 9), "month") == (datetime(2023, 12, 1), datetime(2024, 1, 1))
    assert period_range(datetime(2023, 10, 20, 9), "week") == (datetime(2023, 10, 16), datetime(2023, 10, 23))
    assert period_range(datetime(2023, 10, 20, 9), "year") == (datetime(2023, 1, 1), datetime(2024, 1, 1))


def test_event_mentions() -> None:
    from brain_search.retrieval.question.events import mention

    m = mention("what did we decide before the launch?")
    assert m is not None and (m.lead, m.event, m.words) == ("before", "launch", "before the launch")
    m = mention("notes since our offsite with the team")
    assert m is not None and (m.lead, m.event) == ("since", "offsite")
    assert mention("what did we decide about the launch") is None
    assert mention("how did she feel after the accident") is None  # sequence or cause, not a scope


def test_an_event_is_dated_by_the_latest_memory_that_dates_it() -> None:
    from brain_search.retrieval.question.events import stated_time

    def hit(content: str, ts: str) -> dict[str, object]:
        return {"_source": {"content": content, "timestamp": ts}}

    hits = [
        hit("the launch moved to May", "2026-02-01T09:00:00Z"),
        hit("the launch is in March", "2026-01-10T09:00:00Z"),
        hit("the launch went well", "2026-05-20T09:00:00Z"),  # names it, dates nothing
        hit("a launch party", None),  # type: ignore[arg-type]
    ]
    assert stated_time(hits, "launch") == (_day(2026, 5, 1), _day(2026, 6, 1))
    assert stated_time([hit("the launch went well", "2026-05-20T09:00:00Z")], "launch") is None


def test_a_period_runs_on_past_its_end_but_bounds_stay_exact() -> None:
    from datetime import timedelta

    three = timedelta(days=3)
    week = find("what did I say last week", REF, after=three)
    assert week is not None and week.until == _end(2023, 10, 18)
    yesterday = find("yesterday", REF, after=three)
    assert yesterday is not None and yesterday.until == REF  # never past the reference time
    before = find("before March 2023", REF, after=three)
    assert before is not None and before.until == _end(2023, 2, 28)


@pytest.mark.parametrize(
    "query",
    [
        "I need a plan for the next two weeks",  # an amount of time
        "Five weeks into the project and I am tired",
        "I have a deadline on Friday, help me plan",  # talk of plans: no question about the past
        "Today I want to finish the budget draft",
        "what should I cook tomorrow",  # after the reference time: nothing was said then
        "remind me next week about the invoices",
    ],
)
def test_words_that_name_no_time_to_recall_scope_nothing(query: str) -> None:
    assert find(query, REF) is None, query


def test_the_same_words_scope_a_question_about_the_past() -> None:
    friday = find("what did I say on Friday about the deadline", REF)
    assert friday is not None and friday.since == _day(2023, 10, 13)
    today = find("what did we decide today", REF)
    assert today is not None and today.since == _day(2023, 10, 20)
    # a memory's own words ("the launch moved to May") are read as written, whatever they name
    assert find("the launch moves to May", REF, prefer="current_period", asked=False) is not None


@pytest.mark.parametrize(
    "query",
    [
        # a chat message: the times are in its telling, the question asks about something else
        "It's Monday morning, and I'm already tired. What should we focus on for the budget?",
        "Okay, good. Scheduled for Saturday, April 12th, at 10:00 AM. What else is left to book?",
        "We went over the plan yesterday. Thanks for that.",
        "I'll log in to my bank later today and check. Then let's talk about the transfer.",
    ],
)
def test_in_a_message_of_several_sentences_only_the_one_that_asks_scopes(query: str) -> None:
    assert find(query, REF) is None, query


def test_the_asking_sentence_of_a_longer_message_keeps_its_time_words() -> None:
    found = find("Thanks, that helps. What did we decide about the venue last week?", REF)
    assert found is not None and (found.since, found.until) == (_day(2023, 10, 9), _end(2023, 10, 15))
    shown = find("I lost my notes. Show me what I wrote in January.", REF)
    assert shown is not None and shown.since == _day(2023, 1, 1)
    # one sentence: read as before, whatever its form
    assert find("notes in January", REF) is not None
