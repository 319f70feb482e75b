"""A benchmark pool of distinct texts (no text twice), for corpora of 100k memories and more.

``corpus.load_pool`` recycles the 5,882 LoCoMo turns past their end: BM25 then sees 17 copies of
each text and HNSW clustered vectors. This pool never repeats a text. It holds:

- every LoCoMo turn (10 tenants ``conv-*``, one per conversation, sessions as nodes);
- every RealMem turn, long ones split into paragraphs (10 tenants ``realmem-*``, one per persona,
  sessions as nodes and conversations);
- every SciFact abstract split into sentences (one tenant ``scifact``, the abstract as the
  conversation: about 48k memories in one tenant).

About 103k texts, so tenants hold 0.5k (LoCoMo), about 5.5k (RealMem) and about 48k (SciFact)
memories. Queries are the datasets' own questions and claims, each asked of its tenant. Vectors
come from a disk cache (``CachedEmbedder``), encoded once by the service's int8 query encoder
(``corpus.cached_embedder(int8=True)``: half the encoding time of the fp32 model on two cores,
cosine ≈ 0.994 to its vectors, which is all a latency benchmark needs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import numpy as np

from brain_lab.bench.corpus import Pool
from brain_lab.eval.datasets import Dataset, Memory, load_locomo, load_scifact, resolve_data_dir
from brain_lab.eval.realmem import load_realmem
from brain_search.config import Settings
from brain_search.encoders.embedding import Embedder

MIN_PARAGRAPH = 40
"""characters: shorter pieces of a long turn join the next one"""
MIN_SENTENCE = 30
LONG_TURN = 300
"""characters: turns longer than this are split into paragraphs (RealMem's assistant turns run to 1–5k)"""
SCIFACT_TENANT = "scifact"

_PARAGRAPH = re.compile(r"\n\s*\n|\n(?=[-*#]|\d+[.)] )")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def paragraphs(text: str, min_len: int = MIN_PARAGRAPH) -> list[str]:
    """A long turn's paragraphs (blank lines, list items); pieces shorter than ``min_len`` join
    the next one, so no memory is a lone heading."""
    out: list[str] = []
    carry = ""
    for piece in _PARAGRAPH.split(text):
        piece = (carry + "\n" + piece).strip() if carry else piece.strip()
        if len(piece) < min_len:
            carry = piece
            continue
        out.append(piece)
        carry = ""
    if carry:
        if out:
            out[-1] = out[-1] + "\n" + carry
        else:
            out.append(carry)
    return out


def sentences(text: str, min_len: int = MIN_SENTENCE) -> list[str]:
    """An abstract's sentences of at least ``min_len`` characters."""
    return [s.strip() for s in _SENTENCE.split(text) if len(s.strip()) >= min_len]


def _split(mem: Memory, pieces: list[str]) -> Iterator[Memory]:
    if len(pieces) <= 1:
        yield mem
        return
    for i, p in enumerate(pieces):
        yield Memory(
            memory_id=f"{mem.memory_id}#{i}",
            content=p,
            node_id=mem.node_id,
            timestamp=mem.timestamp,
            source=mem.source,
            conversation_id=mem.conversation_id or mem.memory_id,
        )


def _distinct(rows: Iterable[tuple[str, Memory]]) -> list[tuple[str, Memory]]:
    seen: set[str] = set()
    out: list[tuple[str, Memory]] = []
    for tenant, m in rows:
        key = " ".join(m.content.split()).lower()
        if key and key not in seen:
            seen.add(key)
            out.append((tenant, m))
    return out


def distinct_rows(locomo: Dataset, realmem: Dataset, scifact: Iterable[Dataset]) -> list[tuple[str, Memory]]:
    """(tenant, memory) of the pool, in a fixed order (LoCoMo, RealMem, SciFact), no text twice."""
    rows: list[tuple[str, Memory]] = []
    for tenant, mems in locomo.memories.items():
        rows += [(tenant, m) for m in mems]
    for tenant, mems in realmem.memories.items():
        for m in mems:
            pieces = paragraphs(m.content) if len(m.content) > LONG_TURN else [m.content]
            rows += [(tenant, p) for p in _split(m, pieces)]
    abstracts: dict[str, Memory] = {}
    for ds in scifact:
        for mems in ds.memories.values():
            for m in mems:
                abstracts.setdefault(m.memory_id, m)
    for m in abstracts.values():
        rows += [(SCIFACT_TENANT, p) for p in _split(m, sentences(m.content))]
    return _distinct(rows)


def load_distinct_pool(settings: Settings, embedder: Embedder) -> Pool:
    """The distinct pool with its vectors (``embedder`` is the evaluation's cached one)."""
    data = resolve_data_dir(settings)
    locomo = load_locomo(data)
    realmem = load_realmem(data)
    scifact = [load_scifact(data, "test"), load_scifact(data, "dev")]
    memories = distinct_rows(locomo, realmem, scifact)
    queries: dict[str, list[str]] = {}
    for q in [*locomo.queries, *realmem.queries]:
        queries.setdefault(q.tenant_id, []).append(q.text)
    for ds in scifact:
        queries.setdefault(SCIFACT_TENANT, []).extend(q.text for q in ds.queries)
    vectors = embedder.encode([m.content for _, m in memories])
    tenants = list(dict.fromkeys(t for t, _ in memories))
    return Pool(tenants, memories, np.asarray(vectors, dtype=np.float32), queries)
