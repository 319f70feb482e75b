"""The learned intent model: the shipped weights, the hybrid rule, the fit and the eval's use of it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
from brain_lab.eval.first_seen import (
    FirstSeen,
    FirstSeenStore,
    current_detector,
    dev_only,
    load_first_seen,
)
from brain_lab.eval.fit import FitQuery
from brain_lab.eval.intent_eval import LabelledQuery, load_labelled_queries, project_detector
from brain_lab.eval.intent_fit import (
    ORIGINAL,
    GroupScore,
    choose,
    choose_joint,
    choose_rule,
    design,
    final_design,
    forward_cv,
    pooled,
    regex_baseline,
    retrieval_admissible,
    rows_hash,
)

from brain_search.models import Intent
from brain_search.retrieval.engine.candidates import CandidateFeatures
from brain_search.retrieval.intent import TIER_TARGETS, analyze
from brain_search.retrieval.intent.model import (
    REGEX_FEATURES,
    TIERS,
    HybridRule,
    IntentModel,
    LearnedIntentDetector,
    combine,
    fit_softmax,
    load_model,
    make_intent_detector,
    model_fits,
    model_path_for,
    ngram_vocab,
    ngrams,
)
from brain_search.retrieval.score.ranking import RankingParams


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return v / np.linalg.norm(v)


def _probs(tier: Intent, p: float) -> np.ndarray:
    out = np.full(len(TIERS), (1.0 - p) / (len(TIERS) - 1))
    out[TIERS.index(tier)] = p
    return out


def test_shipped_model_loads_with_provenance_of_the_current_dev_rows() -> None:
    model = load_model()
    assert model.vocab and model.weights.shape == (384 + len(REGEX_FEATURES) + len(model.vocab), len(TIERS))
    prov = model.provenance
    assert prov["split"] == "dev"
    # fails when the dev rows change without a refit (lab/scripts/fit_intent.py)
    rows = dev_only(load_labelled_queries())
    assert prov["rows"] == len(rows)
    assert prov["rows_sha256"] == rows_hash(rows)
    # fails when the stored first-seen regex features of the dev rows change without a refit: the
    # training rows' regex columns come from that file (not from today's regex)
    assert prov["first_seen_sha256"] == load_first_seen().sha256
    assert 0.0 <= prov["min_probability"] < 1.0
    assert LearnedIntentDetector().hybrid_rule() == HybridRule(
        prov["min_probability"], prov["keep_statements"], prov["keep_quoted"]
    )


@pytest.mark.parametrize("encoder", ["multilingual-e5-small", "e5-small-v2", "bge-small-en-v1.5"])
def test_another_encoders_model_is_fitted_on_its_vectors_and_the_current_dev_rows(encoder: str) -> None:
    path = model_path_for(encoder)
    assert model_fits(encoder, path)  # the detector of a tenant on this encoder is the learned one
    prov = load_model(path).provenance
    rows = dev_only(load_labelled_queries())
    assert (prov["split"], prov["rows"], prov["rows_sha256"]) == ("dev", len(rows), rows_hash(rows))
    assert prov["first_seen_sha256"] == load_first_seen().sha256
    assert isinstance(make_intent_detector(True, encoder), LearnedIntentDetector)


def test_prediction_is_deterministic_and_a_distribution() -> None:
    detector = LearnedIntentDetector()
    q = "how have my views on remote work shifted"
    a, b = detector.analyze(q, _vector(1)), detector.analyze(q, _vector(1))
    assert a == b
    x = detector.model.featurize(q, analyze(q), _vector(1))
    assert x.shape == (384 + len(REGEX_FEATURES) + len(detector.model.vocab),)
    p = detector.model.proba(x)
    assert p.shape == (1, len(TIERS))
    assert p.sum() == pytest.approx(1.0)


def test_without_a_vector_the_learned_detector_is_the_regex() -> None:
    q = "What did we discuss about compensation?"
    assert LearnedIntentDetector().analyze(q) == analyze(q)


def test_quoted_words_stay_exact_whatever_the_model_says() -> None:
    q = '"10% each for"'
    regex = analyze(q)
    assert regex.detected_intent is Intent.exact
    out = combine(q, regex, _probs(Intent.broad, 0.99), HybridRule(0.0))
    assert out is regex


def test_a_rule_that_frees_quotes_changes_the_target_not_the_phrase_search() -> None:
    q = 'related ideas to "slow living"'
    regex = analyze(q)
    assert regex.phrases
    free = combine(q, regex, _probs(Intent.broad, 0.9), HybridRule(0.0, keep_quoted=False))
    assert free.detected_intent is Intent.broad
    assert (free.phrases, free.lexical_query) == (regex.phrases, regex.lexical_query)


def test_a_query_of_nothing_but_quoted_words_stays_exact_under_any_rule() -> None:
    for q in ('"patterns over plans"', "“similar to last year”.", "'see you on the other side'"):
        regex = analyze(q)
        assert regex.detected_intent is Intent.exact
        assert combine(q, regex, _probs(Intent.broad, 0.99), HybridRule(0.0, False, False)) is regex


def test_a_search_for_identifier_strings_stays_exact_under_any_rule() -> None:
    for q in ("ERR_CONN_RESET", "INC-4471 mentions", "#reading-list #fiction"):
        regex = analyze(q)
        assert regex.detected_intent is Intent.exact
        assert combine(q, regex, _probs(Intent.precise, 0.99), HybridRule(0.0, False, False)) is regex


def test_where_no_cue_fired_the_model_decides_at_any_probability() -> None:
    q = "compensation"
    regex = analyze(q)
    assert regex.detected_intent is Intent.balanced and regex.cues == ()
    changed = combine(q, regex, _probs(Intent.conceptual, 0.3), HybridRule(0.9))
    assert changed.detected_intent is Intent.conceptual
    assert changed.target_z == TIER_TARGETS[Intent.conceptual]
    assert changed.confidence == pytest.approx(0.3)
    assert changed.cues[-1] == "learned_conceptual"
    assert (changed.lexical_query, changed.phrases) == (regex.lexical_query, regex.phrases)
    assert combine(q, regex, _probs(Intent.balanced, 0.9), HybridRule(0.0)) is regex


def test_a_fired_cue_yields_to_the_model_only_above_the_threshold() -> None:
    q = "What motivates Joanna to keep writing even on tough days?"
    regex = analyze(q)
    assert regex.cues and regex.detected_intent is Intent.precise
    assert combine(q, regex, _probs(Intent.broad, 0.35), HybridRule(0.36)) is regex
    changed = combine(q, regex, _probs(Intent.broad, 0.36), HybridRule(0.36))
    assert changed.detected_intent is Intent.broad
    assert combine(q, regex, _probs(Intent.broad, 0.35), HybridRule(0.0)).detected_intent is Intent.broad


def test_a_plain_statement_keeps_the_regex_answer_unless_the_rule_says_otherwise() -> None:
    q = "Cells lacking the receptor divide faster."
    regex = analyze(q)
    assert regex.detected_intent is Intent.balanced
    assert combine(q, regex, _probs(Intent.exact, 0.99), HybridRule(0.0)) is regex
    free = combine(q, regex, _probs(Intent.exact, 0.99), HybridRule(0.0, keep_statements=False))
    assert free.detected_intent is Intent.exact


def test_the_rule_is_the_best_validated_among_the_admissible() -> None:
    r0, r3, r4 = HybridRule(0.0), HybridRule(0.3), HybridRule(0.4)
    free = HybridRule(0.4, keep_quoted=False)
    scores = [GroupScore("batch 4", 10, 20, 0.5, 0.9, {r0: 0.9, r3: 0.8, r4: 0.8, free: 0.8})]
    assert choose_rule(scores) == r0
    # a tie goes to the more cautious rule: the higher threshold, then the regex kept for quotes
    assert choose_rule(scores, [r3, r4, free]) == r4
    assert choose_rule(scores, [r3, free]) == free
    with pytest.raises(ValueError):
        choose_rule(scores, [])


def test_a_threshold_that_costs_retrieval_is_not_admissible() -> None:
    # one query, two candidates: "a" matches the words (near a precise target's Z), "b" only the
    # meaning (near a broad one's); only "a" is relevant. The model's broad, where it may decide,
    # ranks "b" first
    q = "What motivates Joanna to keep writing even on tough days?"
    regex = analyze(q)
    assert regex.detected_intent is Intent.precise
    feats = CandidateFeatures(
        ids=["a", "b"],
        lexical=[1.0, 0.1],
        semantic=[0.3, 0.9],
        bm25=[10.0, 1.0],
        cosine=[0.3, 0.9],
        in_lexical=[True, True],
        in_semantic=[True, True],
    )
    cands = [FitQuery("locomo", "q1", q, {"a": 1}, ["a", "b"], feats)]

    class Sure:
        def featurize(self, *args: object) -> np.ndarray:
            return np.zeros(1)

        def proba(self, x: np.ndarray) -> np.ndarray:
            return _probs(Intent.broad, 0.5)[None, :]

    low, high = HybridRule(0.4), HybridRule(0.6)
    base, by, ok = retrieval_admissible(cands, {q: _vector(1)}, Sure(), [low, high], RankingParams())  # type: ignore[arg-type]
    assert base["locomo"] == pytest.approx(1.0)
    assert by[high] == base and by[low]["locomo"] < base["locomo"]
    assert ok == [high]
    # the regex baseline computed once for a grid of models gives the same answer
    baseline = regex_baseline(cands, RankingParams())
    assert baseline.ndcg == base and baseline.intents[q] == regex
    shared = retrieval_admissible(cands, {q: _vector(1)}, Sure(), [low, high], RankingParams(), baseline=baseline)  # type: ignore[arg-type]
    assert shared == (base, by, ok)


def test_fit_is_reproducible_and_learns_separable_data() -> None:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(len(TIERS), 6)) * 3
    y = np.repeat(np.arange(len(TIERS)), 20)
    x = centres[y] + rng.normal(size=(len(y), 6)) * 0.3
    a, b = fit_softmax(x, y, 0.01, 500), fit_softmax(x, y, 0.01, 500)
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.bias, b.bias)
    assert np.mean(a.proba(x).argmax(axis=1) == y) == 1.0
    # a stronger penalty gives smaller weights
    assert np.abs(fit_softmax(x, y, 10.0, 500).weights).sum() < np.abs(a.weights).sum()


def test_model_round_trips_through_json() -> None:
    rng = np.random.default_rng(3)
    y = np.arange(10) % len(TIERS)
    m = fit_softmax(rng.normal(size=(10, 4)), y, 0.1, 50)
    m = IntentModel(m.weights, m.bias, m.mean, m.scale, {"rows": 10})
    back = IntentModel.from_json(m.to_json())
    x = rng.normal(size=(3, 4))
    assert np.array_equal(back.proba(x), m.proba(x))
    bad = {**m.to_json(), "regex_features": ["other"]}
    with pytest.raises(ValueError, match="refit"):
        IntentModel.from_json(bad)


def test_ngram_features_follow_the_models_vocabulary() -> None:
    assert {"what", "<s> what", "what did", "did i", "<num>", '"', "?"} <= ngrams('What did I say "about" 53 things?')
    assert ngram_vocab(["why did I go", "why did we stay", "where to"], 2) == ("<s> why", "did", "why", "why did")
    q = "why did we stay"
    n = 384 + len(REGEX_FEATURES)
    vocab = ("<s> why", "did", "zebra")
    rng = np.random.default_rng(5)
    w = rng.normal(size=(n + 3, len(TIERS)))
    m = IntentModel(w, np.zeros(len(TIERS)), np.zeros(n + 3), np.ones(n + 3), {}, vocab)
    x = m.featurize(q, analyze(q), _vector(2))
    assert x[n:].tolist() == [1.0, 1.0, 0.0]
    back = IntentModel.from_json(m.to_json())
    assert back.vocab == vocab and np.array_equal(back.proba(x), m.proba(x))
    with pytest.raises(ValueError, match="refit"):
        IntentModel.from_json({**m.to_json(), "mean": [0.0]})


def test_forward_validation_trains_only_on_earlier_groups() -> None:
    rows = [q for q in dev_only(load_labelled_queries()) if q.source is None or q.batch in ("4", "5")]
    vectors = np.stack([_vector(i) for i in range(len(rows))])
    r0, r5 = HybridRule(0.0), HybridRule(0.5, keep_quoted=False)
    cv = forward_cv(rows, vectors, (1.0,), (r0, r5), _today(rows))
    scores = cv[1.0]
    n_original = sum(q.source is None for q in rows)
    assert [(s.group, s.trained_on) for s in scores] == [("batch 4", n_original), ("batch 5", n_original + 42)]
    assert ORIGINAL not in {s.group for s in scores}
    assert set(pooled(scores)) == {"regex", "learned", f"hybrid {r0.label}", f"hybrid {r5.label}"}
    assert r5.label == "p>=0.5 keep statements"
    assert choose(cv)[0] == 1.0
    assert choose(cv, [r5]) == (1.0, r5)


def _today(rows: list[LabelledQuery]) -> FirstSeenStore:
    """First-seen records of ``rows`` from today's detector."""
    today = current_detector()
    return FirstSeenStore(
        tuple(FirstSeen.of(i, q.query, today.analyze(q.query), today.table, "today") for i, q in enumerate(rows))
    )


def test_training_rows_carry_their_stored_first_seen_features() -> None:
    rows = [q for q in dev_only(load_labelled_queries()) if q.source is None or q.batch in ("4", "5")]
    vectors = np.stack([_vector(i) for i in range(len(rows))])
    # batch 4 as a detector that read every row as broad, a plain statement, would have stored it
    store = FirstSeenStore(
        tuple(
            replace(r, tier="broad", statement=True, detector="c4") if q.batch == "4" else r
            for q, r in zip(rows, _today(rows).records, strict=True)
        )
    )
    batch4 = [i for i, q in enumerate(rows) if q.batch == "4"]
    d = design(rows, vectors, store.of(rows))
    start = vectors.shape[1]
    assert all(d.x[i, start + REGEX_FEATURES.index("regex_tier_broad")] == 1.0 for i in batch4)
    assert all(d.x[i, start + REGEX_FEATURES.index("statement")] == 1.0 for i in batch4)
    assert {d.regex[i].detected_intent for i in batch4} == {Intent.broad}
    scores = forward_cv(rows, vectors, (1.0,), (HybridRule(0.0),), store)[1.0]
    # the held-out batch is scored with its stored regex output, not today's
    expected = np.mean([rows[i].label == "broad" for i in batch4])
    assert scores[0].group == "batch 4" and scores[0].regex == pytest.approx(expected)
    final = final_design(rows, vectors, 3, store)
    assert final.design.x.shape[0] == len(rows) and final.vocab and final.first_seen_sha256 == store.sha256
    without5 = FirstSeenStore(tuple(r for q, r in zip(rows, store.records, strict=True) if q.batch != "5"))
    with pytest.raises(ValueError, match="batch 5"):
        final_design(rows, vectors, 3, without5)


def test_the_eval_detector_reads_the_vector() -> None:
    seen: list[str] = []

    def encode(texts: Sequence[str]) -> np.ndarray:
        seen.extend(texts)
        return np.stack([_vector(len(t)) for t in texts])

    q = "themes in my journal this year"
    detect = project_detector(encode)
    expected = LearnedIntentDetector().analyze(q, _vector(len(q))).detected_intent.value
    assert detect(q) == expected
    assert seen == [q]
    assert project_detector(None, learned=False)(q) == analyze(q).detected_intent.value


def test_the_joint_choice_takes_the_best_admissible_penalty_and_rule() -> None:
    r0, r4 = HybridRule(0.0), HybridRule(0.4)
    cv = {
        1.0: [GroupScore("batch 4", 10, 20, 0.5, 0.9, {r0: 0.95, r4: 0.8})],
        3.0: [GroupScore("batch 4", 10, 20, 0.5, 0.9, {r0: 0.9, r4: 0.85})],
    }
    assert choose_joint(cv, {1.0: [r0, r4], 3.0: [r0, r4]}) == (1.0, r0)
    # l2=1 keeps retrieval only with the cautious rule: the stronger penalty's free rule wins
    assert choose_joint(cv, {1.0: [r4], 3.0: [r0, r4]}) == (3.0, r0)
    with pytest.raises(ValueError):
        choose_joint(cv, {1.0: [], 3.0: []})
