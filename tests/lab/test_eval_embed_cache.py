"""The embedding cache encodes each text once per model, across instances (disk)."""

from pathlib import Path

import numpy as np
from brain_lab.eval.embed_cache import CachedEmbedder


class _Counting:
    name = "fake"
    dimension = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.array([[len(t), 1.0, 0.0, 0.0] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_cache_hits_on_disk_and_builds_the_model_lazily(tmp_path: Path) -> None:
    inner = _Counting()
    built: list[int] = []

    def factory() -> _Counting:
        built.append(1)
        return inner

    a = CachedEmbedder(tmp_path, "m/1", 4, factory)
    v1 = a.encode(["x", "yy", "x"])
    assert v1.shape == (3, 4) and np.allclose(v1[0], v1[2])
    assert inner.calls == [["x", "yy"]] and a.encoded == 2
    b = CachedEmbedder(tmp_path, "m/1", 4, factory)
    assert len(b) == 2
    assert np.allclose(b.encode(["yy", "x"]), v1[[1, 0]])
    assert b.encode([]).shape == (0, 4)
    assert len(inner.calls) == 1 and len(built) == 1
    b.encode(["zzz"])
    assert inner.calls[-1] == ["zzz"] and len(built) == 2  # b builds its own model on its first miss


def test_other_model_does_not_share_vectors(tmp_path: Path) -> None:
    inner = _Counting()
    CachedEmbedder(tmp_path, "m1", 4, lambda: inner).encode(["x"])
    CachedEmbedder(tmp_path, "m2", 4, lambda: inner).encode(["x"])
    assert len(inner.calls) == 2
