"""Vectors on disk, keyed by model name + sha256 of the text, so a re-run encodes nothing.

``CachedEmbedder`` implements the ``Embedder`` protocol in front of a real one that is built only
when a text is missing from the cache (loading the model costs seconds; encoding SciFact's corpus
costs minutes on two cores). Files live under ``settings.cache_dir / "embeddings" / <model>-<dim>``
as ``.npz`` chunks (``keys``: hex digests, ``vectors``: float32), written atomically, so several
processes can share the cache and an interrupted run keeps what it finished.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from brain_search.encoders.embedding import Embedder

CHUNK = 512


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_folder(root: Path, model_name: str, dimension: int) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_name)
    return root / f"{slug}-{dimension}"


class CachedEmbedder:
    """Disk-cached ``encode``; ``factory`` builds the real embedder on the first miss."""

    def __init__(
        self,
        root: Path,
        name: str,
        dimension: int,
        factory: Callable[[], Embedder],
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.name = name
        self.dimension = dimension
        self.folder = cache_folder(root, name, dimension)
        self._factory = factory
        self._inner: Embedder | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self._loaded_files: set[str] = set()
        self._lock = threading.Lock()
        self.progress = progress
        self.encoded = 0
        """Texts this instance had to encode (cache misses)."""

    # -- storage ------------------------------------------------------------------------------
    def _load(self) -> None:
        if not self.folder.is_dir():
            return
        for path in sorted(self.folder.glob("*.npz")):
            if path.name in self._loaded_files or path.name.startswith("."):
                continue
            try:
                with np.load(path) as data:
                    keys, vecs = data["keys"], data["vectors"]
            except (OSError, ValueError, KeyError, zipfile.BadZipFile):
                continue  # a chunk being written by another process, or damaged: re-encode instead
            if vecs.shape[1:] != (self.dimension,):
                continue
            for k, v in zip(keys.tolist(), vecs, strict=True):
                self._vectors[str(k)] = v
            self._loaded_files.add(path.name)

    def _store(self, keys: list[str], vectors: np.ndarray) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256("".join(keys).encode()).hexdigest()[:24] + ".npz"
        tmp = self.folder / f".{name}.{os.getpid()}.tmp"
        with tmp.open("wb") as fh:  # a file object: numpy adds no ".npz" to the temporary name
            np.savez(fh, keys=np.array(keys), vectors=vectors.astype(np.float32))
        os.replace(tmp, self.folder / name)
        self._loaded_files.add(name)

    def __len__(self) -> int:
        with self._lock:
            self._load()
            return len(self._vectors)

    # -- the Embedder protocol ----------------------------------------------------------------
    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct texts with no vector in memory nor on disk (disk is re-read only then)."""
        with self._lock:
            todo = [t for t in dict.fromkeys(texts) if text_key(t) not in self._vectors]
            if todo:
                self._load()
                todo = [t for t in todo if text_key(t) not in self._vectors]
            return todo

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text (cached ones are not re-encoded)."""
        keys = [text_key(t) for t in texts]
        todo = self.missing(texts)
        for start in range(0, len(todo), CHUNK):
            batch = todo[start : start + CHUNK]
            if self._inner is None:
                self._inner = self._factory()
            vecs = np.asarray(self._inner.encode(batch), dtype=np.float32)
            if vecs.shape != (len(batch), self.dimension):
                raise ValueError(f"embedder returned {vecs.shape}, expected ({len(batch)}, {self.dimension})")
            batch_keys = [text_key(t) for t in batch]
            with self._lock:
                self._store(batch_keys, vecs)
                self._vectors.update(zip(batch_keys, vecs, strict=True))
            self.encoded += len(batch)
            if self.progress:
                self.progress(len(batch))
        if not keys:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            return np.stack([self._vectors[k] for k in keys])
