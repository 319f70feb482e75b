"""The learned intent detector keeps its last answers by query and vector: a repeated question
is not parsed or featurized again, a different vector is, and the cache stays bounded."""

from __future__ import annotations

import numpy as np

from brain_search.retrieval.intent.model import LearnedIntentDetector, make_intent_detector


def test_a_repeated_question_is_answered_from_the_cache(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    detector = make_intent_detector(True, "all-MiniLM-L6-v2")
    assert isinstance(detector, LearnedIntentDetector)
    detector.cache_size = 2
    calls: list[str] = []
    inner = detector._analyze

    def counted(query: str, vector: np.ndarray):  # type: ignore[no-untyped-def]
        calls.append(query)
        return inner(query, vector)

    monkeypatch.setattr(detector, "_analyze", counted)
    v = np.random.default_rng(1).normal(size=384).astype(np.float32)
    first = detector.analyze("what do I think about overnight flights?", v)
    assert detector.analyze("what do I think about overnight flights?", v.copy()) == first
    assert calls == ["what do I think about overnight flights?"]
    detector.analyze("what do I think about overnight flights?", v * 0.5)  # another vector: analysed
    detector.analyze("explore everything related to my health", v)
    assert len(calls) == 3 and len(detector._seen) == 2  # bounded: the oldest went
    assert detector.analyze("quote", None) == detector.analyze("quote", None)  # no vector: the regex, uncached
    assert len(detector._seen) == 2
