"""What the API does with a query on its way to a vector: ``QueryCut`` reads at most
``query_max_tokens`` word pieces of a long query (its last by default, cut at a word's edge), and
``QueryCache`` keeps a tenant's query vectors (LRU, bounded in bytes). The embedders themselves are
in ``embedding``; which one a process gets, in ``factory``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from brain_search.encoders.batching import kept_pieces
from brain_search.encoders.embedding import Embedder, OnnxQueryEmbedder, untruncated_tokenizer
from brain_search.encoders.onnx_graph import encoder_dir
from brain_search.lru import ByteLRU


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
