"""Issue 66 item 7: a fuzz of the two inputs that were 500s. Any memory id with any piece
metadata is either accepted or refused with a reason naming a field; any reference time in
years 1–9999, with any of a set of time words, either scopes the recall or is refused naming
``reference_time`` (never an OverflowError or a ValueError of the calendar)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from brain_search.errors import InvalidInput
from brain_search.ingest.chunking import id_problem
from brain_search.retrieval.question.timewords import time_scope

DIGITS = st.sampled_from(["0", "7", "²", "٣", "¹⁰", "１", "Ⅻ", "-1", "01", "", "½"])
QUERIES = st.sampled_from(
    [
        "what did we decide this year?",
        "what happened last month?",
        "what did I say yesterday?",
        "what about december?",
        "what did we plan for next year?",
        "what did she say in 9999?",
        "what was said two years ago?",
        "what did we do last week and the week before?",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    parent=st.text(min_size=1, max_size=12).filter(lambda t: "#" not in t and "/" not in t),
    digits=DIGITS,
    index=st.one_of(st.none(), st.integers(-3, 20), st.text(max_size=3)),
    count=st.one_of(st.none(), st.integers(-3, 20)),
    chunk=st.booleans(),
)
def test_any_piece_id_is_accepted_or_refused_naming_a_field(
    parent: str, digits: str, index: object, count: object, chunk: bool
) -> None:
    metadata = {"chunk_of": parent, "chunk_index": index, "chunk_count": count}
    problem = id_problem(f"{parent}#{digits}", metadata, chunk)
    assert problem is None or problem[0] in ("memory_id", "metadata")
    if problem is None:
        assert digits.isascii() and digits.isdigit()


@settings(max_examples=300, deadline=None)
@given(
    query=QUERIES,
    when=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59), timezones=st.just(UTC)),
    after_days=st.integers(0, 400),
)
def test_any_reference_time_scopes_the_recall_or_is_refused_naming_it(
    query: str, when: datetime, after_days: int
) -> None:
    try:
        scope = time_scope(
            query, (), None, None, reference_time=when, read_words=True, after=timedelta(days=after_days)
        )
    except InvalidInput as exc:
        assert exc.field == "reference_time"
        return
    if scope is not None and scope.since is not None and scope.until is not None:
        assert scope.since <= scope.until
