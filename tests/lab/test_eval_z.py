"""The Z figures' pure parts: AUROC, the floor fit, literal containment, Exact-tier scoring."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from brain_lab.eval.exact_match import Phrase
from brain_lab.eval.z_eval import (
    Pair,
    ZPhraseQuery,
    auroc,
    evaluate_exact_tier,
    fit_calibration,
    holds_literally,
    youden_threshold,
)

from brain_search.models import (
    MemoryResult,
    NodeRef,
    QueryAnalysis,
    RecallRequest,
    RecallResponse,
    ResultMetadata,
    Scores,
    Tiers,
    Timings,
)
from brain_search.retrieval.score.zaxis import ZCalibration


def test_auroc() -> None:
    assert auroc([3, 4], [1, 2]) == 1.0
    assert auroc([1, 2], [3, 4]) == 0.0
    assert auroc([1, 1], [1, 1]) == 0.5
    assert auroc([2, 0], [1, 1]) == 0.5


def test_youden_threshold_separates() -> None:
    t, j = youden_threshold([0.6, 0.7, 0.8], [0.1, 0.2, 0.65])
    assert t == 0.7 and j == pytest.approx(2 / 3 - 0)
    t, j = youden_threshold([0.5, 0.6], [0.1, 0.2])
    assert 0.2 < t <= 0.5 and j == 1.0


def test_holds_literally() -> None:
    assert holds_literally("Caroline: I went to a LGBTQ support group!", "went to a LGBTQ support group")
    assert holds_literally("the group for support went well", "support group went")  # every content word
    assert not holds_literally("the support meeting", "support group")


def test_fit_calibration_reads_the_distributions() -> None:
    pos = [Pair(c, 0.0) for c in (0.4, 0.5, 0.6, 0.7)]
    neg = [Pair(c, 0.0) for c in (0.0, 0.1, 0.1, 0.2, 0.3)]
    fit = fit_calibration(pos, neg, ZCalibration())
    cal = fit.calibration
    assert isinstance(cal, ZCalibration)
    assert cal.cos_unrelated == pytest.approx(0.1)
    assert cal.cos_strong == pytest.approx(0.55)  # the median relevant cosine
    assert fit.floor_tpr == 1.0 and fit.floor_fpr == 0.0


def _result(mid: str, z: float) -> MemoryResult:
    return MemoryResult(
        id=mid,
        content=f"text of {mid}",
        node=NodeRef(id=None, label=None),
        scores=Scores(lexical=0, semantic=0, z_position=z, relevance=0),
        metadata=ResultMetadata(),
    )


def test_exact_tier_placement_and_precision() -> None:
    phrase = Phrase("p0", "t", "m1", "text of m1", "locomo")
    queries = [ZPhraseQuery(phrase, "quoted", '"text of m1"'), ZPhraseQuery(phrase, "what_exactly", "q2")]

    def recall(tenant: str, req: RecallRequest, exclude: Sequence[str]) -> RecallResponse:
        exact = [_result("m1", 0.05), _result("m2", 0.2)] if req.query.startswith('"') else [_result("m2", 0.2)]
        return RecallResponse(
            results=exact,
            tiers=Tiers(exact_matches=exact),
            query_analysis=QueryAnalysis(detected_intent="exact", target_z=0.1, z_tolerance=0.2, confidence=1),
            timings=Timings(),
        )

    res = evaluate_exact_tier(queries, recall, "dev")
    assert res.placed == [True, False] and res.placement == 0.5
    assert res.shown == 3 and res.literal == 1
    assert res.by_form() == {"quoted": 1.0, "what_exactly": 0.0}
    assert res.misses[0]["holder"] == "m1"


def test_isotonic_pools_violators() -> None:
    from brain_lab.eval.z_eval import isotonic

    assert isotonic([0.0, 1.0, 0.0, 1.0]) == [0.0, 0.5, 0.5, 1.0]
    assert isotonic([1.0, 0.0], [3.0, 1.0]) == [0.75, 0.75]


def test_fit_relevance_curve_is_monotone_and_weighs_classes_equally() -> None:
    from brain_lab.eval.z_eval import fit_relevance_curve

    answers = [0.6 + 0.01 * i for i in range(10)]
    misses = [0.05 + 0.002 * i for i in range(100)]  # ten times as many: weighed equally
    fit = fit_relevance_curve(answers, misses)
    ys = [y for _, y in fit.knots]
    assert ys == sorted(ys) and ys[0] == 0.0 and ys[-1] == 1.0
    assert (fit.n_positive, fit.n_negative) == (10, 100)
    overlap = fit_relevance_curve([0.5, 0.5], [0.5])  # the same strength: as likely either way
    assert dict(overlap.knots)[0.5] == 0.5
