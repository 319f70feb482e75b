"""The choice of ingest mode: worker mode when ``redis_url`` is set (Celery on Redis, jobs for
``workers/``), embedded mode otherwise (a thread pool in the API process, and `brain-search ingest`
in-process), each an ``IngestService`` on its own queue; and the document embedder of embedded mode.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder
from brain_search.encoders.factory import make_document_embedder
from brain_search.errors import SetupError
from brain_search.ingest.dead_letters import DeadLetterStore
from brain_search.ingest.forget import Forgetter
from brain_search.ingest.history import HistoryStore
from brain_search.ingest.inprocess import InProcessQueue
from brain_search.ingest.memories import MemoryStore
from brain_search.ingest.pipeline import IngestPipeline
from brain_search.ingest.service import IngestService
from brain_search.ingest.versions import engine_version_clock
from brain_search.store.following import following


class BatchEmbedder:
    """The model for ingestion in embedded mode: fp32 (the API's query embedder may be int8), on
    ``ingest_inprocess_embed_threads`` onnxruntime threads. One by default: the API's recalls
    already keep the cores busy, and a pool of one spinning thread per core beside them cost a
    single-memory write ~76 ms of CPU instead of ~15 (lab/reports/performance.md). Loaded on the first
    task, once per service, without torch (``make_document_embedder``)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.name: str = settings.embedding_model
        self.dimension = settings.embedding_dimension
        self._model: Embedder | None = None
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            if self._model is None:
                self._model = make_document_embedder(self.settings, self.settings.ingest_inprocess_embed_threads)
            model = self._model
        return model.encode(texts)


def make_ingest_service(settings: Settings, client: OpenSearch, query_embedder: Embedder) -> IngestService:
    """Worker mode when ``settings.redis_url`` is set (jobs go to Redis for ``workers/``), embedded
    mode otherwise (a thread pool in this process). ``query_embedder``: the API's own encoder,
    reused for documents only when it is the plain fp32 one on default threads."""
    s = settings
    if s.ingest_mode == "workers" and not s.redis_url:
        raise SetupError("BRAIN_INGEST_MODE=workers needs BRAIN_REDIS_URL (is it missing from the secret?)")
    if s.redis_url and s.ingest_mode != "embedded":
        from brain_search.ingest.broker import CeleryQueue  # imports Celery only in worker mode

        stores = MemoryStore(client, s), HistoryStore(client, s), Forgetter(client, s)
        versions = engine_version_clock(client, s.memories_alias, s.version_max_skew_s)
        return IngestService(CeleryQueue(s, client), DeadLetterStore(client, s), *stores, "workers", versions)
    # the API's query encoder is tuned for one short text (one thread, maybe int8): documents get their own
    reuse = s.query_embedding_threads <= 0 and not s.query_embedding_int8
    return embedded_service(
        s, client, query_embedder if reuse else following(client, s, BatchEmbedder(s), BatchEmbedder)
    )


def embedded_service(settings: Settings, client: OpenSearch, embedder: Embedder) -> IngestService:
    """Embedded mode: tasks on a thread pool of this process (the API without Redis, and
    `brain-search ingest` in-process), writes stamped like every other."""
    s = settings
    dead_letters = DeadLetterStore(client, s)
    queue = InProcessQueue(IngestPipeline(client, embedder, s), dead_letters, s)
    stores = MemoryStore(client, s), HistoryStore(client, s), Forgetter(client, s)
    versions = engine_version_clock(client, s.memories_alias, s.version_max_skew_s)
    return IngestService(queue, dead_letters, *stores, "embedded", versions)
