"""The dev-split fitter's pure part: scoring stored candidates and coordinate ascent."""

from pathlib import Path

from brain_lab.eval import fit

from brain_search.retrieval.engine.candidates import CandidateFeatures
from brain_search.retrieval.score.ranking import RankingParams


def _query(dataset: str, qid: str, text: str, relevant: str) -> fit.FitQuery:
    # "a" is the lexical winner, "b" the semantic one
    f = CandidateFeatures(
        ids=["a", "b", "c"],
        lexical=[0.9, 0.2, 0.1],
        semantic=[0.2, 0.9, 0.1],
        bm25=[9.0, 1.0, 0.5],
        cosine=[0.2, 0.9, 0.1],
        in_lexical=[True, True, True],
        in_semantic=[False, True, True],
    )
    return fit.FitQuery(dataset, qid, text, {relevant: 1}, ["a", "b", "c"], f)


def test_score_ranks_with_the_pipeline_relevance() -> None:
    qs = [_query("locomo", "q1", "Find exactly where I said ship it", "a"), _query("scifact", "q2", "sleep", "b")]
    sc = fit.score(qs, RankingParams(), fit.intents_of(qs))
    assert sc["locomo/nDCG@10"] == 1.0  # an exact-intent query: the lexical winner first
    assert set(sc) == {"locomo/nDCG@10", "locomo/R@10", "scifact/nDCG@10", "scifact/R@100", "objective"}


def test_fit_never_worsens_the_objective(tmp_path: Path) -> None:
    qs = [_query("locomo", "q1", "sleep habits", "b"), _query("scifact", "q2", "sleep", "b")]
    fit.save(qs, tmp_path / "c.jsonl")
    qs = fit.load(tmp_path / "c.jsonl")
    start = RankingParams(sem_weight_mid=0.3, sem_weight_slope=0.5, lexical_anchor_weight=0.5)
    before = fit.score(qs, start, fit.intents_of(qs))["objective"]
    best, scores = fit.fit(qs, start, grid={"sem_weight_mid": [0.3, 0.5, 0.7]}, rounds=2)
    assert scores["objective"] >= before
    assert best.sem_weight_mid in (0.3, 0.5, 0.7)


def test_intents_come_from_the_given_detector_with_the_query_vectors() -> None:
    import numpy as np

    from brain_search.models import Intent
    from brain_search.retrieval.intent import QueryIntent, analyze

    seen: dict[str, float] = {}

    class Broad:
        def analyze(self, query: str, vector: np.ndarray | None = None) -> QueryIntent:
            seen[query] = float(vector[0]) if vector is not None else -1.0
            return QueryIntent(Intent.broad, 0.9, 0.2, 0.9, (), query, ())

    qs = [_query("locomo", "q1", "sleep habits", "b"), _query("scifact", "q2", "sleep", "b")]
    intents = fit.intents_of(qs, Broad(), lambda texts: np.array([[float(len(t))] for t in texts]))
    assert {t: i.detected_intent for t, i in intents.items()} == {"sleep habits": Intent.broad, "sleep": Intent.broad}
    assert seen == {"sleep habits": 12.0, "sleep": 5.0}
    assert fit.intents_of(qs) == {q.text: analyze(q.text) for q in qs}


def test_a_monotone_fit_does_not_trade_one_dataset_for_the_other() -> None:
    # LoCoMo wants the semantic winner "b", SciFact the lexical winner "a" in one of its two
    # queries (the other's relevant memory is last either way): more semantic weight gains LoCoMo
    # more than it costs SciFact
    qs = [
        _query("locomo", "q1", "sleep habits", "b"),
        _query("scifact", "q2", "sleep", "a"),
        _query("scifact", "q3", "sleep routines", "c"),
    ]
    start = RankingParams(sem_weight_mid=0.0, lexical_anchor_weight=0.0)
    grid = {"sem_weight_mid": [0.0, 0.7]}
    intents = fit.intents_of(qs)
    before = fit.score(qs, start, intents)
    free, free_sc = fit.fit(qs, start, grid=grid, intents=intents)
    assert free.sem_weight_mid == 0.7 and free_sc["scifact/nDCG@10"] < before["scifact/nDCG@10"]
    kept, kept_sc = fit.fit(qs, start, grid=grid, intents=intents, monotone=True)
    assert kept == start
    assert all(kept_sc[k] >= v for k, v in before.items())
