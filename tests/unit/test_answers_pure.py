"""Pure parts of issue 55's answers: the calibrated relevance curve, strict / min_relevance
selection, a chosen Z that keeps matches above non-matches, and a question that asks for a
conversation answered with conversations."""

from __future__ import annotations

import pytest

from brain_search.models import MatchKind
from brain_search.retrieval.engine.candidates import Candidate, Ranked
from brain_search.retrieval.intent import RegexIntentDetector
from brain_search.retrieval.score.conversations import asks_for_conversation
from brain_search.retrieval.score.scoring import conversations_asked, floor_first, kept_results
from brain_search.retrieval.score.zaxis import ZCalibration, interpolate


def test_interpolate_is_linear_between_knots_and_flat_beyond() -> None:
    knots = ((0.1, 0.0), (0.3, 0.5), (0.9, 0.9))
    assert interpolate(knots, 0.0) == 0.0
    assert interpolate(knots, 0.2) == pytest.approx(0.25)
    assert interpolate(knots, 0.6) == pytest.approx(0.7)
    assert interpolate(knots, 1.0) == 0.9
    assert interpolate((), 0.5) == 0.0


def test_an_exact_match_reads_at_least_what_the_floor_reads() -> None:
    cal = ZCalibration(floor=0.3, relevance_knots=((0.0, 0.0), (0.3, 0.5), (1.0, 1.0)))
    assert cal.relevance(MatchKind.meaning, 0.1) < 0.5
    assert cal.relevance(MatchKind.phrase, 0.1) == 0.5
    assert cal.relevance(MatchKind.words, 0.9) == cal.relevance(MatchKind.meaning, 0.9)


def test_a_meaning_match_needs_its_cosine_to_clear_and_reads_at_most_the_floor_without_it() -> None:
    cal = ZCalibration(
        cos_unrelated=0.1, cos_strong=0.5, floor=0.3, relevance_knots=((0.0, 0.0), (0.3, 0.5), (1.0, 1.0))
    )
    # one shared word lifts the strength over the floor; the cosine (sigma 0.4) does not follow
    assert cal.above_floor(MatchKind.meaning, 0.6) and not cal.clears_floor(MatchKind.meaning, 0.6, sigma=0.4)
    assert cal.clears_floor(MatchKind.meaning, 0.6, sigma=0.5)
    assert cal.clears_floor(MatchKind.terms, 0.6, sigma=0.0)  # most of the query's terms: the strength decides
    assert cal.clears_floor(MatchKind.phrase, 0.0, sigma=0.0)
    assert cal.relevance(MatchKind.meaning, 0.6, clears=False) == 0.5  # the floor's reading, no more
    assert cal.relevance(MatchKind.meaning, 0.6, clears=True) == pytest.approx(0.714, abs=1e-3)
    assert cal.relevance(MatchKind.meaning, 0.1, clears=False) < 0.5


def test_floor_first_keeps_each_group_in_its_order() -> None:
    assert floor_first([3, 0, 2, 1], [True, False, False, True]) == [3, 0, 2, 1]
    assert floor_first([2, 1, 0, 3], [True, False, False, True]) == [0, 3, 2, 1]


def _ranked(shown: list[bool], calibrated: list[float]) -> Ranked:
    n = len(shown)
    zero = [0.0] * n
    return Ranked([], zero, zero, zero, zero, [MatchKind.meaning] * n, zero, list(range(n)), calibrated, shown)


def test_kept_results_strict_and_min_relevance() -> None:
    r = _ranked([True, False, True, False], [0.9, 0.2, 0.6, 0.7])
    assert kept_results(r, False, None).order == [0, 1, 2, 3]
    assert kept_results(r, True, None).order == [0, 2]
    assert kept_results(r, False, 0.65).order == [0, 3]
    assert kept_results(r, True, 0.65).order == [0]


def test_a_response_tells_withheld_matches_from_nothing_matched() -> None:
    """Issue 68: with `min_relevance` above what the matches read, the results are empty while
    memories match; `withheld_matches` says so, `matched` counts what clears the floor."""
    r = _ranked([True, False, True, False], [0.9, 0.2, 0.6, 0.7])
    kept = kept_results(r, True, 0.95, limit=10)
    # all 4 ranked left out; 0 and 2 clear the floor, both under 0.95
    assert (kept.order, kept.withheld, kept.matched, kept.withheld_matches) == ([], 4, 2, 2)
    kept = kept_results(r, False, 0.65, limit=1)
    assert (kept.order, kept.withheld, kept.matched, kept.withheld_matches) == ([0], 0, 2, 0)
    kept = kept_results(r, True, 0.65, limit=2)  # of the first two matches (0, 2), 2 is under 0.65
    assert (kept.order, kept.withheld, kept.matched, kept.withheld_matches) == ([0], 1, 2, 1)
    none = _ranked([False, False], [0.2, 0.1])
    kept = kept_results(none, True, 0.5, limit=10)
    assert (kept.order, kept.matched, kept.withheld_matches) == ([], 0, 0)
    assert kept_results(r, True, None, limit=10).withheld_matches == 0


def _with_conversations(convs: list[str | None], shown: list[bool]) -> Ranked:
    n = len(convs)
    zero = [0.0] * n
    cands = [
        Candidate(f"d{i}", {"memory_id": f"m{i}", "conversation_id": c, "node_id": "n"}) for i, c in enumerate(convs)
    ]
    kinds = [MatchKind.meaning] * n
    strength = [0.6] * n
    return Ranked(
        cands, zero, zero, zero, zero, kinds, strength, list(range(n)), [0.9 if s else 0.2 for s in shown], shown
    )


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("What was that conversation about changing jobs?", True),
        ("What was that chat with Ana about Lisbon?", True),
        ("What was that email about the lease?", False),  # an email may be a note
        ("What did I say about books I can't put down?", False),  # a note or a turn
        ("Where do I live?", False),
    ],
)
def test_a_question_asks_for_a_conversation_only_when_it_names_one(query: str, asks: bool) -> None:
    cues = RegexIntentDetector().analyze(query).cues
    assert asks_for_conversation(query, cues) is asks


def test_asked_for_a_conversation_its_turns_come_first_and_a_note_does_not_clear_the_floor() -> None:
    cal = ZCalibration(floor=0.3, relevance_knots=((0.0, 0.0), (0.3, 0.5), (1.0, 1.0)))
    # the note (no conversation) ranked first and cleared the floor; the turns did not
    r = _with_conversations([None, "c1", "c1", "c2"], [True, False, False, False])
    conversations_asked(r, cal)
    assert r.order == [1, 2, 3, 0]
    assert r.shown == [False] * 4
    assert r.calibrated[0] == cal.relevance(MatchKind.meaning, 0.6, clears=False)
    # a turn that clears stays first; the note comes after every turn
    r = _with_conversations([None, "c1", None, "c2"], [True, False, True, True])
    conversations_asked(r, cal)
    assert r.order == [3, 1, 0, 2] and r.shown == [False, False, False, True]


@pytest.mark.parametrize("convs", [[None, None], ["c1", "c2"]])
def test_asked_for_a_conversation_a_tenant_of_only_notes_or_only_turns_is_ranked_as_before(convs) -> None:  # type: ignore[no-untyped-def]
    cal = ZCalibration(floor=0.3, relevance_knots=((0.0, 0.0), (0.3, 0.5), (1.0, 1.0)))
    r = _with_conversations(convs, [True, False])
    conversations_asked(r, cal)
    assert r.order == [0, 1] and r.shown == [True, False] and r.calibrated == [0.9, 0.2]
