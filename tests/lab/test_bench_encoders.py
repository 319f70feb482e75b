"""`brain-search bench encoders` (issue 68): each variant reads the lengths it is timed at in its
own word pieces, and the resident-memory probe sees an encoder load (fresh processes)."""

from __future__ import annotations

from brain_lab.bench.encoders import make_variants, pieces_counter, resident_memory, text_of_length

from brain_search.config import load_settings

WORDS = ("the patients were randomised to receive either placebo or the drug for twelve weeks " * 40).split()


def test_every_variant_is_timed_at_its_own_piece_count() -> None:
    queries, passages = make_variants(load_settings(), with_e5_fp32=False)
    assert set(queries) == {"minilm-int8", "e5-int8", "bge-int8", "bge-fp32", "e5v2-int8"}
    assert set(passages) == {"minilm-fp32", "e5-int8", "bge-int8", "bge-fp32", "e5v2-int8"}
    for name, encoder in queries.items():
        count = pieces_counter(name, encoder)
        for pieces in (10, 34, 256):
            text = text_of_length(pieces, count, WORDS)
            assert pieces <= count(text) < pieces + 6, (name, pieces, count(text))
        assert encoder.encode([text]).shape == (1, 384)


def test_resident_memory_is_measured_per_encoder_and_role() -> None:
    mem = resident_memory(" ".join(WORDS[:400]))
    assert set(mem) == {
        f"{e}/{r}"
        for e in ("all-MiniLM-L6-v2", "multilingual-e5-small", "bge-small-en-v1.5", "e5-small-v2")
        for r in ("query", "document")
    }
    for figures in mem.values():
        assert figures["added"] > 10 and figures["peak"] >= figures["after"] > figures["before"]
