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
