"""What one attempt of an ingest job came to (``AttemptOutcome``), and the pure reads of an item
that the attempt and its clean-up (``leftovers``) share: the piece's parent, its document's piece
count, and why a vector cannot be indexed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from brain_search.ingest.bulk import ItemOutcome
from brain_search.ingest.models import MemoryItem


@dataclass
class AttemptOutcome:
    indexed: list[str] = field(default_factory=list)
    permanent: list[tuple[MemoryItem, ItemOutcome]] = field(default_factory=list)
    pending: list[tuple[MemoryItem, ItemOutcome]] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    deferred: list[MemoryItem] = field(default_factory=list)  # not started: the time budget ran out, or it yielded
    yielded: bool = False  # deferred because another job was waiting (lanes.py), not for the time budget


def chunk_parent(item: MemoryItem) -> str | None:
    parent = (item.metadata or {}).get("chunk_of")
    return parent if isinstance(parent, str) else None


def chunk_count(item: MemoryItem) -> int:
    """How many pieces the document of a piece has (0: the item is a whole memory)."""
    if chunk_parent(item) is None:
        return 0
    n = (item.metadata or {}).get("chunk_count")
    return n if isinstance(n, int) and n > 0 else 1


def vector_problem(vec: np.ndarray, dimension: int) -> str | None:
    """Why a vector cannot be indexed (None when it can)."""
    if vec.shape != (dimension,):
        return f"vector has shape {vec.shape}, expected ({dimension},)"
    if not np.isfinite(vec).all():
        return "vector has NaN or infinite components"
    if not np.any(vec):
        return "vector is all zeros (cosine similarity is undefined)"
    return None
