"""The calibrated Z axis (pure): kinds of match, Z bands, strength and the relevance floor."""

from __future__ import annotations

import pytest

from brain_search.models import MatchKind
from brain_search.retrieval.score.zaxis import (
    ZCalibration,
    literal_span,
    match,
    query_terms_of,
)
from brain_search.retrieval.text import query_terms
from brain_search.retrieval.zscale import spec_z

CAL = ZCalibration(cos_unrelated=0.1, cos_strong=0.6, floor=0.3)


def _match(query_lexical: str, content: str, cosine: float, phrases: tuple[str, ...] = (), stemmed=None):  # type: ignore[no-untyped-def]
    terms = query_terms(query_lexical)
    q = query_terms_of(query_lexical, phrases, terms)
    hits = stemmed if stemmed is not None else [False] * len(terms)
    return match(content, q, hits, cosine, cal=CAL)


def test_quoted_phrase_is_exact_whatever_the_cosine() -> None:
    for cos in (0.05, 0.5, 0.95):
        m = _match("53% for me", "The equity split is 53% for me, 10% each.", cos, phrases=("53% for me",))
        assert m.kind is MatchKind.phrase and m.z < 0.3 and m.strength == 1.0


def test_all_content_words_close_together_are_exact_tighter_is_lower() -> None:
    tight = _match("equity split 53%", "The equity split is 53% for me.", 0.9)
    loose = _match("equity split 53%", "The equity we split was, in the end, 53% for me.", 0.9)
    assert tight.kind is MatchKind.words and loose.kind is MatchKind.words
    assert tight.z < loose.z < 0.3


def test_content_words_scattered_far_apart_are_not_exact() -> None:
    content = (
        "Discussion with Jacob about CTO compensation: base salary, equity, a title, and more on the letter of offer."
    )
    m = _match("Jacob's CTO offer", content, 0.6, stemmed=[True, True, True])
    assert m.kind is MatchKind.terms
    assert 0.3 <= m.z < 0.5


def test_a_stray_keyword_hit_is_no_exact_match() -> None:
    # the spec's formula puts this at Z ~ 0.2 ("Exact"): lexical 0.4, cosine 0.1
    assert spec_z(0.4, 0.1) < 0.3
    m = _match(
        "Jacob's CTO offer",
        "Hard no on the board seat. We offered an observer seat.",
        0.1,
        stemmed=[False, False, True],
    )
    assert m.kind is MatchKind.meaning
    assert m.z > 0.7 and not CAL.clears_floor(m.kind, m.strength)


def test_other_words_spread_by_meaning_not_pinned_at_one() -> None:
    close = _match("fairness in partnerships", "Equal shares feel just on day one and unjust later.", 0.58)
    theme = _match("fairness in partnerships", "Founding teams fail from trust problems.", 0.40)
    noise = _match("fairness in partnerships", "The puppy chewed a cable.", 0.05)
    assert close.kind is theme.kind is noise.kind is MatchKind.meaning
    assert 0.5 <= close.z < 0.7 <= theme.z < noise.z <= 1.0
    assert CAL.clears_floor(close.kind, close.strength) and CAL.clears_floor(theme.kind, theme.strength)
    assert not CAL.clears_floor(noise.kind, noise.strength)


def test_names_and_numbers_weigh_key_weight() -> None:
    q = query_terms_of("Priya 53%", (), ["priya", "53"], key_weight=2.0)
    assert q.weights == (2.0, 2.0)
    q = query_terms_of("equity for Priya", (), ["equity", "priya"], key_weight=2.0)
    assert q.weights == (1.0, 2.0)
    q = query_terms_of("Jacob's CTO offer", (), ["jacob", "cto", "offer"], key_weight=2.0)
    assert q.weights == (2.0, 2.0, 1.0)  # a possessive name is still a name


def test_a_memory_sharing_only_a_common_word_of_a_number_query_is_not_precise() -> None:
    # "53% equity": "Golden handcuffs ... equity" shares a word but not the number the query is about
    cal = ZCalibration(cos_unrelated=0.1, cos_strong=0.6, floor=0.2)
    terms = query_terms("53% equity")
    q = query_terms_of("53% equity", ("53% equity",), terms, cal.key_weight)
    word_only = match("Golden handcuffs: the equity is worth too much to leave.", q, [False, True], 0.45, cal=cal)
    number = match("Priya pushed back on the 53%: she wants less dilution.", q, [True, False], 0.45, cal=cal)
    assert word_only.kind is MatchKind.meaning and word_only.z >= 0.5
    assert number.kind is MatchKind.terms and 0.3 <= number.z < 0.5


def test_literal_span() -> None:
    words = "a b x c b a".split()
    assert literal_span(words, ["a", "b"]) == 2
    assert literal_span(words, ["a", "c"]) == 3
    assert literal_span(words, ["a", "z"]) is None
    assert literal_span(words, []) is None


def test_strength_and_sigma_are_bounded_and_monotone() -> None:
    assert CAL.sigma(-1.0) == 0.0 and CAL.sigma(1.0) == 1.0
    assert CAL.sigma(0.35) == pytest.approx(0.5)
    assert CAL.strength(0.0, 0.0) == 0.0 and CAL.strength(1.0, 0.0) == 1.0
    assert CAL.strength(0.2, 1.0) > CAL.strength(0.2, 0.5) > CAL.strength(0.2, 0.0)
    zs = [CAL.meaning_z(s / 10) for s in range(11)]
    assert zs == sorted(zs, reverse=True) and zs[0] == 1.0 and zs[-1] == 0.5
    assert CAL.meaning_z(CAL.floor) == pytest.approx(0.9)


def test_spec_formula_kept() -> None:
    assert spec_z(0.0, 0.0) == 0.5
    assert spec_z(0.85, 0.72) == pytest.approx(0.72 / 1.57)


def test_no_false_precise_for_a_number_fragment_the_engine_did_not_find() -> None:
    # issue 42 item 4: "$235,000" split into "235" and "000"; "1,000 memories" holds "000" only
    # literally, the engine found neither term (lexical 0): not a terms match
    cal = ZCalibration(cos_unrelated=0.1, cos_strong=0.6, floor=0.2)
    text = "Find exactly where I said $235,000"
    terms = query_terms("said 235,000")
    assert terms == ["said", "235", "000"]
    q = query_terms_of("said 235,000", (), terms, cal.key_weight, idf={"said": 1.0, "235": 3.0, "000": 3.0})
    assert q.weights[2] == pytest.approx(0.05)  # the fragment weighs the least a term can
    pricing = "Pricing idea: a free tier capped at 1,000 memories, $12 a month"
    got = match(pricing, q, [False, False, False], 0.5, cal=cal)
    assert got.kind is MatchKind.meaning, text
    # even a term the text holds literally is no terms match when the engine matched none
    literal = query_terms_of("pricing month", (), ["pricing", "month"], cal.key_weight)  # far apart
    assert match(pricing, literal, [False, False], 0.5, cal=cal).kind is MatchKind.meaning
    assert match(pricing, literal, [True, False], 0.5, cal=cal).kind is MatchKind.terms


def test_every_place_on_the_axis_is_read_from_the_scale() -> None:
    """Issue 70: ``zaxis.match`` places each kind of match where ``zscale`` says (one owner)."""
    from brain_search.retrieval import zscale

    phrase = _match("53% for me", "The equity split is 53% for me.", 0.2, phrases=("53% for me",))
    assert phrase.z == zscale.PHRASE_Z
    tight = _match("split equity", "The equity split is 53%.", 0.9)  # both words side by side, not the phrase
    assert tight.z == round(zscale.words_z(0.0), 4) == zscale.WORDS_Z.start
    assert zscale.words_z(1.0) == pytest.approx(0.25) and zscale.words_z(7.0) == zscale.words_z(1.0)
    assert zscale.terms_z(1.0, CAL.precise_share) == zscale.TERMS_Z.start == 0.30
    assert zscale.terms_z(CAL.precise_share, CAL.precise_share) == pytest.approx(0.49)
    strong = CAL._strong
    for s in (0.0, 0.1, CAL.floor, (CAL.floor + strong) / 2, strong, 0.99, 1.0):
        assert CAL.meaning_z(s) == zscale.meaning_z(s, CAL.floor, strong)
    assert zscale.meaning_z(0.0, 0.3, 0.6) == pytest.approx(1.0)
    assert zscale.meaning_z(0.6, 0.3, 0.6) == pytest.approx(0.55)
    assert zscale.THEME_Z == 0.8
