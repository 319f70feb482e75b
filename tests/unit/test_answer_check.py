"""The floor's answer check (issue 55), the pure parts: what a question asks about and for, which
memories can answer it, and what the floor then keeps."""

from __future__ import annotations

import pytest

from brain_search.models import MatchKind
from brain_search.retrieval.engine.candidates import Candidate, Ranked
from brain_search.retrieval.score.answer_check import Asked, answers, asked
from brain_search.retrieval.score.scoring import answer_checked, floor_checks
from brain_search.retrieval.score.zaxis import ZCalibration


@pytest.mark.parametrize(
    ("query", "names", "people", "money", "identifier"),
    [
        ("How much did I earn at Finlo?", ("finlo",), 0, True, False),
        ("What's Priya's phone number?", ("priya",), 0, False, True),
        ("What's my gym membership number?", (), 0, False, True),
        ("When is my next dentist appointment?", (), 1, False, False),
        ("What did Tomás and I decide about Hiroshima?", ("tomás", "hiroshima"), 0, False, False),
        # the number is not what is asked
        ("Whose phone number did James receive?", ("james",), 0, False, False),
        ("What will James do after getting Samantha's phone number?", ("james", "samantha"), 0, False, False),
        # "how much" of something that is not money
        ("How much vitamin D do I take?", (), 0, False, False),
        # a date's capital names nothing; the sentence's first word is not a name
        ("What did I do on Friday in March?", (), 0, False, False),
        ("Where do I live?", (), 0, False, False),
        # kinship is not read (conversations leave family implicit)
        ("When is my sister's birthday?", (), 0, False, False),
    ],
)
def test_what_a_question_asks(query: str, names: tuple[str, ...], people: int, money: bool, identifier: bool) -> None:
    a = asked(query)
    assert (a.names, len(a.people), a.money, a.identifier) == (names, people, money, identifier)


def test_a_request_of_several_sentences_or_many_words_checks_nothing() -> None:
    assert not asked("I logged into Asanify. The Remittance project is there. What's next?").checks
    assert not asked(" ".join(["What did Ana say about the plan"] * 5) + "?").checks


@pytest.mark.parametrize(
    ("query", "content", "ok"),
    [
        ("How much did I earn at Finlo?", "First day at Harbor Health as a staff engineer.", False),
        ("How much did I earn at Finlo?", "Giving Finlo four weeks' notice.", False),  # no figure
        ("How much did I earn at Finlo?", "The Harbor offer came in at 142,000 euros a year.", False),  # not Finlo
        ("How much did I earn at Finlo?", "Finlo paid me 96,000 euros a year.", True),
        ("How much did I earn at Finlo?", "Finlo paid me ninety thousand a year.", True),
        ("What's Priya's phone number?", "My manager is Priya Nair. One-on-ones at 3pm.", False),
        ("What's Priya's phone number?", "Priya's number: +351 912 345 678", True),
        ("When is my next dentist appointment?", "Physio every Tuesday at 8am with Dr. Okafor.", False),
        ("When is my next dentist appointment?", "Dentist on the 14th at 9.", True),
        ("What did Tomás and I decide about Hiroshima?", "Tomas: let's skip it and stay in Kyoto.", True),  # accents
        ("Where do I live?", "Moved to Lisbon.", True),  # nothing asked: anything may answer
        ("What did we plan for Japan?", "Tomás wants Japanese food every night.", True),  # a name's forms
        ("What did Ana say about the plan?", "Banana bread recipe from the plan.", False),  # not inside a word
        # names and roles are looked for only in memories written the way the question is
        ("Where am I staying in Tokyo next spring?", "来年の春に東京タワーの近くのホテルに三泊する予定です。", True),
        ("When is my dentist appointment?", "Am Dienstag habe ich einen Termin beim Zahnarzt.", True),
        ("¿Qué dijo Ana sobre Lisboa?", "Marta dijo que Oporto es más barato.", False),
    ],
)
def test_which_memories_can_answer(query: str, content: str, ok: bool) -> None:
    assert answers(asked(query), content) is ok


def test_a_name_in_most_of_the_tenants_memories_does_not_gate_alone() -> None:
    a = asked("What kind of games has James tried to develop?")
    assert a.without_common(lambda n: (300, 600)).names == ()  # the turns may call him "you"
    assert a.without_common(lambda n: (3, 600)) is a
    assert a.without_common(lambda n: (1, 5)) is a  # in a tiny tenant one mention is no pattern
    # with a rarer name beside it, both still gate (either may be mentioned)
    b = asked("What did Andrew get for Scout?")
    assert b.without_common(lambda n: (300 if n == "andrew" else 4, 600)).names == ("andrew", "scout")


def _ranked(contents: list[str], kinds: list[MatchKind]) -> Ranked:
    n = len(contents)
    zero = [0.0] * n
    cands = [Candidate(f"d{i}", {"memory_id": f"m{i}", "content": c}) for i, c in enumerate(contents)]
    return Ranked(cands, zero, zero, zero, zero, kinds, [0.6] * n, list(range(n)), [0.9] * n, [True] * n)


def test_a_memory_that_cannot_answer_does_not_clear_the_floor_and_reads_as_such() -> None:
    cal = ZCalibration(floor=0.3, relevance_knots=((0.0, 0.0), (0.3, 0.5), (1.0, 1.0)))
    r = _ranked(
        ["The Harbor offer: 142,000 euros.", "I earned 80k at Finlo.", "How much did I earn at Finlo? No idea."],
        [MatchKind.meaning, MatchKind.terms, MatchKind.words],
    )
    floor_checks(r, "How much did I earn at Finlo?", [], cal)
    assert r.shown == [False, True, True]  # an exact match is never checked
    assert r.calibrated[0] == cal.relevance(MatchKind.meaning, 0.6, clears=False)
    assert r.order == [0, 1, 2]  # the order does not change


def test_nothing_asked_changes_nothing() -> None:
    r = _ranked(["anything"], [MatchKind.meaning])
    answer_checked(r, Asked(), ZCalibration())
    assert r.shown == [True]
