"""The API warms the recall path at start, without the engine (pure: fakes for the client and
the query encoder)."""

from __future__ import annotations

from typing import Any

import numpy as np

from brain_search.config import Settings
from brain_search.retrieval.pipeline import Retriever


class NoEngine:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"warm-up called the engine: {name}")


class Encoder:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        self.texts.append(text)
        v = np.ones(384, dtype=np.float32)
        return v / np.linalg.norm(v)


def test_warm_up_reads_a_time_word_and_never_calls_the_engine() -> None:
    encoder = Encoder()
    retriever = Retriever(NoEngine(), Settings(), encoder)  # type: ignore[arg-type]
    retriever.warm_up()
    assert encoder.texts == [Retriever.WARM_UP_QUERY] and "last week" in Retriever.WARM_UP_QUERY
