"""Pure parts of issue 55's answers: the calibrated relevance curve, strict / min_relevance
selection, and a chosen Z that keeps matches above non-matches."""

from __future__ import annotations

import pytest

from brain_search.models import MatchKind
from brain_search.retrieval.candidates import Ranked
from brain_search.retrieval.scoring import floor_first, kept_results
from brain_search.retrieval.zaxis import ZCalibration, interpolate


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
    assert kept_results(r, False, None) == [0, 1, 2, 3]
    assert kept_results(r, True, None) == [0, 2]
    assert kept_results(r, False, 0.65) == [0, 3]
    assert kept_results(r, True, 0.65) == [0]
