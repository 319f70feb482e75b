"""e5-small-v2 from langchain4j's jar on Maven Central (brain_search/encoders/e5v2.py,
jar_encoder.py): the pinned jar, the mean pooling, each side's prefix, the int8 model one text a
run, the query cut that keeps the prefix, and the encoder's record."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from brain_search.config import Settings, load_settings
from brain_search.encoders.base import E5_SMALL_V2, MINILM, check_index_encoder, encoder_info, index_meta
from brain_search.encoders.batching import mean_pooled, padded
from brain_search.encoders.e5v2 import E5V2, FP32, INT8
from brain_search.encoders.factory import make_document_embedder, make_query_embedder
from brain_search.encoders.jar_encoder import JarEncoder
from brain_search.encoders.maven_weights import sha256_of
from brain_search.errors import SetupError

TEXTS = [
    "What does my sister do for work?",
    "My sister Carmen works as a nurse at the hospital in Seville.",
    "The rent for the flat in Berlin is 1200 euros a month.",
    "For Q1 we decided to focus on the onboarding flow and the billing rewrite.",
]


@pytest.fixture(scope="module")
def settings() -> Settings:
    return load_settings(embedding_model=E5_SMALL_V2.name)


@pytest.fixture(scope="module")
def query(settings: Settings) -> JarEncoder:
    return JarEncoder(E5V2, settings.models_dir, settings.cache_dir / "downloads", side="query")


@pytest.fixture(scope="module")
def passage(settings: Settings) -> JarEncoder:
    return JarEncoder(E5V2, settings.models_dir, settings.cache_dir / "downloads", side="passage")


def test_the_cached_jar_carries_the_pinned_checksum(query: JarEncoder, settings: Settings) -> None:
    assert sha256_of(settings.cache_dir / "downloads" / INT8.file) == INT8.sha256
    folder = settings.models_dir / INT8.folder
    assert (folder / "onnx" / "model.onnx").stat().st_size > 30_000_000
    assert (folder / "tokenizer.json").is_file()
    assert "e5-small-v2" in FP32.artifact and FP32.sha256 != INT8.sha256  # published, not fetched here


def test_each_side_reads_its_prefix_and_the_vector_is_the_mean(query: JarEncoder, passage: JarEncoder) -> None:
    assert (query.prefix, passage.prefix) == ("query: ", "passage: ")
    ids = query.tokenizer.encode("query: " + TEXTS[0]).ids  # the prefix read as the model was trained
    tokens, mask = padded([ids])
    session = query._sessions[0]
    state = session.run(None, {"input_ids": tokens, "attention_mask": mask, "token_type_ids": np.zeros_like(tokens)})
    assert np.allclose(query.encode(TEXTS[:1])[0], mean_pooled(state[0], mask)[0], atol=1e-5)
    q, p = query.encode(TEXTS[:1])[0], passage.encode(TEXTS[:1])[0]
    assert float(q @ p) < 0.999  # the sides differ by their prefix only
    assert np.allclose(np.linalg.norm(query.encode(TEXTS), axis=1), 1.0, atol=1e-5)


def test_int8_runs_one_text_a_run(passage: JarEncoder) -> None:
    assert passage.batch_size == 1
    assert np.array_equal(passage.encode([TEXTS[1]])[0], passage.encode(TEXTS)[1])


def test_a_question_finds_its_answer(query: JarEncoder, passage: JarEncoder) -> None:
    q = query.encode(TEXTS[:1])[0]
    nurse, rent, roadmap = passage.encode(TEXTS[1:])
    assert float(q @ nurse) > max(float(q @ rent), float(q @ roadmap)) + 0.05


def test_a_long_query_is_read_from_its_end_after_the_prefix(query: JarEncoder) -> None:
    story = " ".join(f"context{i} of the long story" for i in range(200))
    assert query.pieces_count(story) > 512
    question = story + " so where does Carmen work?"
    cut = query.encode_kept([question], 24, "end")[0]
    tail = query.encode([" ".join(question.split()[-8:])])[0]
    head = query.encode([story])[0]
    assert float(cut @ tail) > float(cut @ head)
    assert np.allclose(query.encode_kept(["short question"], 24, "end"), query.encode(["short question"]))


def test_the_service_encodes_with_e5v2_when_asked(settings: Settings) -> None:
    q, d = make_query_embedder(settings), make_document_embedder(settings)
    assert q.name == d.name == "e5-small-v2"
    qv, dv = q.encode(TEXTS[:1]), d.encode(TEXTS[:1])
    assert qv.shape == dv.shape == (1, 384)
    assert float(qv[0] @ dv[0]) < 0.999  # the API reads "query: ", a worker "passage: "


def test_the_index_records_e5v2_and_refuses_another() -> None:
    assert encoder_info("e5-small-v2") is E5_SMALL_V2
    meta = index_meta(E5_SMALL_V2)
    check_index_encoder("m-v1", meta, E5_SMALL_V2)
    with pytest.raises(SetupError, match=r"e5-small-v2"):
        check_index_encoder("m-v1", meta, MINILM)


def test_the_image_ships_the_pinned_jar() -> None:
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    assert f"-Dartifact={INT8.artifact}" in dockerfile and E5_SMALL_V2.name in dockerfile
