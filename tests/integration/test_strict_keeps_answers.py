"""Strict mode that keeps answers (issue 68, item 6), on the real stack: a new user's twelve
memories. The issue's user saw strict return nothing for "What did we discuss about the Q1 roadmap
last week?" (the memory "For Q1 we decided…" exists) and for "What is my home address?" ("…moved
to 220 Cedar Street…"), and `min_relevance: 0.7` drop an exact quote while `nothing_matched`
stayed false, so a caller could not tell "withheld" from "matched"."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_answers import recall, store

pytestmark = pytest.mark.integration

Q1 = "For Q1 we decided to ship the new onboarding flow first and move the billing rewrite to Q2."
RETRO = 'In the retro I said "we keep promising dates we cannot keep" and everyone agreed.'
MEMORIES = [
    ("q1", "2026-11-24T10:00:00Z", Q1),
    ("address", "2026-10-02T09:00:00Z", "We moved last month; the new place is 220 Cedar Street, apartment 4B."),
    ("dentist", "2026-11-03T08:00:00Z", "Dentist appointment with Dr. Alvarez on December 12 at 9:30."),
    ("wifi", "2026-09-14T20:00:00Z", "The guest wifi password at home is sunflower-42."),
    ("sister", "2026-08-01T12:00:00Z", "My sister Lena works as a pediatric nurse in Denver."),
    ("allergy", "2026-07-19T12:00:00Z", "I'm allergic to peanuts, so always check the ingredients."),
    ("standup", "2026-11-20T16:00:00Z", "Team standup moved to 9:15 every weekday starting next month."),
    ("retro", "2026-11-18T15:00:00Z", RETRO),
    ("car", "2026-06-05T12:00:00Z", "The car is due for its service in January; the garage is on Elm Road."),
    ("book", "2026-11-01T21:00:00Z", "Reading The Left Hand of Darkness for the book club this month."),
    ("gym", "2026-10-20T07:00:00Z", "Gym membership renews on the 1st, 45 dollars a month."),
    ("mum", "2026-11-10T12:00:00Z", "Mum is coming to visit for a week over Christmas."),
]


@pytest.fixture
def newcomer(api, make_tenant) -> dict[str, str]:  # type: ignore[no-untyped-def]
    headers = make_tenant("newcomer")
    store(api, headers, [{"content": c, "memory_id": m, "timestamp": t} for m, t, c in MEMORIES])
    return headers


def seen(out: dict[str, Any]) -> list[tuple[str, str, float, bool, float]]:
    """What a failure prints: each result's id, kind, match, whether it clears the floor, relevance."""
    return [
        (r["id"], r["match_kind"], r["scores"]["match"], r["scores"]["clears_floor"], r["scores"]["relevance"])
        for r in out["results"][:5]
    ]


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ("What did we discuss about the Q1 roadmap last week?", "q1"),
        ("What is my home address?", "address"),
        pytest.param(
            "What's my address?",
            "address",
            marks=pytest.mark.xfail(
                strict=True,
                reason="the issue's failure, reproduced: first when ranked, but all-MiniLM-L6-v2's cosine for "
                "'address' and '220 Cedar Street' stays under the floor, so strict says nothing matched",
            ),
        ),
    ],
)
def test_strict_keeps_the_answer(api, newcomer, query, answer) -> None:  # type: ignore[no-untyped-def]
    loose = recall(api, newcomer, query=query)
    assert loose["results"][0]["id"] == answer or answer in [r["id"] for r in loose["results"][:2]], seen(loose)
    strict = recall(api, newcomer, query=query, strict=True)
    assert [r["id"] for r in strict["results"]][:1] == [answer], seen(loose)
    assert strict["query_analysis"]["matched"] >= 1 and not strict["query_analysis"]["nothing_matched"]


def test_a_quote_reads_as_sure_as_it_is(api, newcomer) -> None:  # type: ignore[no-untyped-def]
    """The calibrated relevance topped at 0.65 for every match, so `min_relevance: 0.7` dropped the
    memory a quoted phrase came from. A memory holding the quoted phrase reads 0.99 (its dev
    precision); a question's match in other words still reads what the calibration says."""
    query = 'Find where I said "we keep promising dates"'
    out = recall(api, newcomer, query=query, min_relevance=0.7, strict=True)
    assert [r["id"] for r in out["results"]] == ["retro"], seen(out)
    assert out["results"][0]["scores"]["relevance"] >= 0.99
    unquoted = recall(api, newcomer, query="we keep promising dates")
    assert unquoted["results"][0]["id"] == "retro"
    assert unquoted["results"][0]["scores"]["relevance"] < 0.99  # the whole query held, not a quote


def test_a_caller_tells_withheld_from_nothing_matched(api, newcomer) -> None:  # type: ignore[no-untyped-def]
    # matched, but the caller's threshold is above what the match reads: withheld, said so
    asked = recall(api, newcomer, query="When is my dentist appointment?", strict=True)
    assert asked["results"][0]["id"] == "dentist", seen(asked)
    cut = asked["results"][0]["scores"]["relevance"] + 0.001
    out = recall(api, newcomer, query="When is my dentist appointment?", strict=True, min_relevance=cut)
    qa = out["query_analysis"]
    assert out["results"] == []
    assert not qa["nothing_matched"] and qa["matched"] == asked["query_analysis"]["matched"] >= 1
    assert qa["withheld_matches"] == len(asked["results"]) >= 1
    # nothing in the tenant answers: nothing matched, nothing withheld by the threshold
    none = recall(api, newcomer, query="What is my blood type?", strict=True, min_relevance=0.1)
    qa = none["query_analysis"]
    assert none["results"] == [] and qa["nothing_matched"], seen(recall(api, newcomer, query="What is my blood type?"))
    assert qa["matched"] == 0 and qa["withheld_matches"] == 0
    # without a threshold nothing is withheld by one, whatever strict leaves out
    loose = recall(api, newcomer, query="When is my dentist appointment?")
    assert loose["query_analysis"]["withheld_matches"] == 0
    assert loose["query_analysis"]["matched"] == asked["query_analysis"]["matched"]
