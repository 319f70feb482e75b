"""An English BERT-family encoder on onnxruntime from an ONNX export that langchain4j publishes
on Maven Central (``encoders.maven_weights``): bge-small-en-v1.5 (``encoders.bge``) and
e5-small-v2 (``encoders.e5v2``). A ``JarModel`` says which jars carry it, how its vector is
pooled and what a side reads before the text; ``JarEncoder`` runs one side of it.

The int8 exports quantise each activation over the whole batch at run time (their
``DynamicQuantizeLinear`` nodes), so a text's vector would depend on the texts beside it and on
their padding: the int8 model runs one text a run, as multilingual-e5-small's does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from brain_search.encoders.batching import cls_pooled, encode_in_batches, kept_rows, mean_pooled, padded
from brain_search.encoders.maven_weights import JarWeights, unpacked
from brain_search.encoders.sessions import session_options

MAX_POSITIONS = 512
Precision = Literal["int8", "fp32"]
Side = Literal["query", "passage"]


@dataclass(frozen=True)
class JarModel:
    """What an encoder published as langchain4j jars is and how it reads a text."""

    name: str
    jars: Mapping[str, JarWeights]
    """by precision: ``int8`` (always) and ``fp32`` where it is published"""
    pooling: Literal["cls", "mean"]
    prefixes: Mapping[str, str] = field(default_factory=dict)
    """what each side reads before the text (e5's ``query: `` / ``passage: ``); none for bge"""


class JarEncoder:
    """One side of a ``JarModel`` as an ``Embedder``: L2-normalised float32 vectors of 384
    components. ``sessions`` one-thread sessions share out a call's batches (a worker's)."""

    def __init__(
        self,
        model: JarModel,
        models_dir: Path,
        downloads: Path,
        *,
        side: Side = "passage",
        precision: Precision = "int8",
        max_tokens: int = MAX_POSITIONS,
        batch_size: int = 16,
        sessions: int = 1,
        intra_op_threads: int = 1,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = unpacked(model.jars[precision], models_dir, downloads)
        self.model, self.side, self.precision = model, side, precision
        self.name = model.name
        self.prefix = model.prefixes.get(side, "")
        self.max_tokens = min(max_tokens, MAX_POSITIONS)
        self.batch_size = 1 if precision == "int8" else batch_size
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_truncation()  # the ids are cut here (``encode_kept``), at a word's edge
        self.tokenizer.no_padding()
        self.whole = self.tokenizer
        """the untruncated tokenizer ``QueryCut.cut`` reads (the same one here)"""
        self._prefix_ids = list(self.tokenizer.encode(self.prefix, add_special_tokens=False).ids) if self.prefix else []
        opts = session_options(1 if sessions > 1 else intra_op_threads) or ort.SessionOptions()
        path = str(folder / "onnx" / "model.onnx")
        self._sessions = [
            ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"]) for _ in range(max(1, sessions))
        ]
        self._inputs = {i.name for i in self._sessions[0].get_inputs()}
        self._pool = ThreadPoolExecutor(len(self._sessions), f"embed-{self.name}") if sessions > 1 else None
        dim = self._sessions[0].get_outputs()[0].shape[-1]
        self.dimension = int(dim) if isinstance(dim, int) else 384
        self.backend = "onnx-int8" if precision == "int8" else "onnx"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's vector from its side's prefix and its first word pieces, at most
        ``max_tokens`` in all ([CLS] and [SEP] included)."""
        return self.encode_kept(texts, self.max_tokens, "start")

    def encode_kept(self, texts: Sequence[str], max_tokens: int, keep: Literal["end", "start"]) -> np.ndarray:
        """Each text's vector from at most ``max_tokens`` pieces: the prefix, then the text's first
        ones, or with ``keep="end"`` its last ones, never part of a word (``QueryCut``'s reading)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        room = min(max_tokens, self.max_tokens) - 2  # [CLS] and [SEP]
        rows = kept_rows(self.tokenizer.encode_batch(list(texts)), room - len(self._prefix_ids), keep)
        if self._prefix_ids:
            rows = [[row[0], *self._prefix_ids, *row[1:]] for row in rows]
        return encode_in_batches(
            rows, self.batch_size, self.dimension, self._encode, sessions=self._sessions, pool=self._pool
        )

    def pieces_count(self, text: str) -> int:
        """How many word pieces ``text`` is read as, [CLS], [SEP] and the prefix included (uncut)."""
        return len(self.tokenizer.encode(text).ids) + len(self._prefix_ids)

    def _encode(self, rows: Sequence[Sequence[int]], session: Any) -> np.ndarray:
        ids, mask = padded(rows)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = session.run(None, feed)[0]
        return cls_pooled(tokens) if self.model.pooling == "cls" else mean_pooled(tokens, mask)
