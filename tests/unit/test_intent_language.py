"""The learned intent model was fitted on English questions only: elsewhere the regex decides
(issue 53, item 5: intent cues must not misfire on other languages). e5's model, without this
gate, sent "我最喜欢喝什么茶？" to Exact and cost the multilingual set a cross-lingual answer."""

from __future__ import annotations

import numpy as np
import pytest

from brain_search.retrieval.intent import analyze, reads_as_english
from brain_search.retrieval.intent.model import LearnedIntentDetector, make_intent_detector


@pytest.mark.parametrize(
    ("query", "english"),
    [
        ("What did Tomás and I decide about Hiroshima?", True),  # a name with an accent
        ("Neutrophils produce IL-1β in response to large particles.", True),  # a Greek letter in a claim
        ("Mia daycare pickup time", True),  # a name that is an Italian word
        ('Where did I say "ＤＯＮＥ"?', True),  # full-width Latin
        ("¿A quién le vendí mi bicicleta?", False),
        ("Quel livre ai-je fini de lire ?", False),  # French without an accent
        ("Wann beginnt mein neues Gehalt nach der Beförderung?", False),
        ("Qual é o meu prato favorito?", False),
        ("我最喜欢喝什么茶？", False),
        ("寿司屋の定休日は何曜日ですか？", False),
        ("Где мой паспорт?", False),
    ],
)
def test_which_questions_read_as_english(query: str, english: bool) -> None:
    assert reads_as_english(query) is english


def test_the_learned_model_decides_only_for_english_questions() -> None:
    detector = make_intent_detector(True, "all-MiniLM-L6-v2")
    assert isinstance(detector, LearnedIntentDetector)
    v = np.random.default_rng(3).normal(size=384).astype(np.float32)
    for query in ("我最喜欢喝什么茶？", "¿Qué carrera voy a correr en marzo?", "Quel livre ai-je fini de lire ?"):
        assert detector.analyze(query, v) == analyze(query), query  # the regex's answer, whatever the vector
