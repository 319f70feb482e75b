"""Phrase sampling, phrasings and the containment check of the exact-match evaluation."""

from brain_lab.eval.datasets import Memory
from brain_lab.eval.exact_match import (
    PHRASINGS,
    ExactMatchResult,
    contains_phrase,
    doc_split,
    evaluate_exact_match,
    normalize,
    phrase_queries,
    sample_phrases,
)


def test_normalize_and_contains() -> None:
    assert normalize("  The “Equity”   split—53%! ") == "the equity split 53"
    assert normalize("ＤＯＮＥ") == "done"
    assert contains_phrase("The equity split is 53% for me, 10% each", "equity split is 53%")
    assert contains_phrase("I'm not a morning person.", "i’m not a morning person")
    assert not contains_phrase("the equity splits", "equity split")  # whole words only
    assert not contains_phrase("anything", "")


def _pool() -> dict[str, list[Memory]]:
    texts = [
        "the quick brown fox jumps over the lazy dog near the river bank today",
        "a completely different sentence about equity splits. And vesting cliffs for founders!",
        "the quick brown fox jumps over the lazy dog near the river bank today",  # duplicate
        "kombucha is just expensive vinegar with good marketing says my friend Lena",
    ]
    return {"t": [Memory(f"m{i}", t) for i, t in enumerate(texts)]}


def test_sampled_phrases_are_unique_in_their_tenant_and_seeded() -> None:
    pool = _pool()
    phrases = sample_phrases(pool, 6, seed=3, corpus="x")
    assert phrases == sample_phrases(pool, 6, seed=3, corpus="x")
    assert len({p.text for p in phrases}) == len(phrases) > 0
    for p in phrases:
        holders = [m.memory_id for m in pool["t"] if contains_phrase(m.content, p.text)]
        assert holders == [p.memory_id]
        assert p.memory_id in ("m1", "m3")  # the duplicated text can never give a unique phrase
        assert 4 <= len(p.text.split()) <= 8
        assert not any(mark in p.text for mark in ".!?")  # within one sentence


def test_eligible_restricts_the_source_not_the_uniqueness_check() -> None:
    phrases = sample_phrases(_pool(), 3, seed=1, corpus="x", eligible=lambda m: m.memory_id == "m3")
    assert phrases and {p.memory_id for p in phrases} == {"m3"}


def test_phrasings_are_dealt_evenly() -> None:
    phrases = sample_phrases(_pool(), 12, seed=5, corpus="x", min_words=3)
    queries = phrase_queries(phrases, seed=5)
    counts = {name: sum(q.phrasing == name for q in queries) for name in PHRASINGS}
    assert max(counts.values()) - min(counts.values()) <= 1
    for q in queries:
        assert q.phrase.text in q.query


def test_doc_split_is_stable_and_roughly_60_40() -> None:
    splits = [doc_split(str(i)) for i in range(2000)]
    assert splits == [doc_split(str(i)) for i in range(2000)]
    assert 0.55 < splits.count("dev") / 2000 < 0.65


class _Fixed:
    def __init__(self, name: str, answer: list[str]) -> None:
        self.name = name
        self.answer = answer

    def search(self, tenant_id: str, query: str, limit: int, **bounds: object) -> list[str]:
        return self.answer[:limit]


def test_precision_at_1_and_failures() -> None:
    pool = _pool()
    phrases = [p for p in sample_phrases(pool, 4, seed=2, corpus="x") if p.memory_id == "m1"][:1]
    queries = phrase_queries(phrases, seed=0)
    contents = {("t", m.memory_id): m.content for m in pool["t"]}
    good, bad = _Fixed("good", ["m1", "m0"]), _Fixed("bad", ["m0", "m1"])
    res: ExactMatchResult = evaluate_exact_match(queries, [good, bad], contents, "dev")
    assert res.precision("good") == 1.0 and res.precision("bad") == 0.0
    assert [(f.system, f.rank_of_expected) for f in res.failures] == [("bad", 2)]
