"""KeyStore's caches (pure: a counting stand-in for the engine's GET)."""

from __future__ import annotations

from typing import Any

import pytest
from opensearchpy import NotFoundError

from brain_search.auth import KeyStore, hash_key
from brain_search.config import load_settings
from brain_search.errors import Unauthorized


class _Engine:
    def __init__(self, docs: dict[str, dict[str, Any]]) -> None:
        self.docs = docs
        self.gets = 0

    def get(self, index: str, id: str) -> dict[str, Any]:
        self.gets += 1
        if id not in self.docs:
            raise NotFoundError(404, "not_found", {})
        return {"_source": self.docs[id]}


def test_an_unknown_key_costs_one_engine_lookup_not_one_per_request() -> None:
    engine = _Engine({hash_key("bsk_good"): {"tenant_id": "acme", "revoked": False}})
    keys = KeyStore(engine, load_settings())  # type: ignore[arg-type]
    for _ in range(200):
        with pytest.raises(Unauthorized, match="unknown API key"):
            keys.resolve("bsk_made_up")
    assert engine.gets == 1
    assert keys.resolve("bsk_good") == "acme" and engine.gets == 2
    assert keys.resolve("bsk_good") == "acme" and engine.gets == 2  # the positive cache


def test_the_negative_cache_expires() -> None:
    engine = _Engine({})
    keys = KeyStore(engine, load_settings(), unknown_ttl_s=0.0)  # type: ignore[arg-type]
    for _ in range(3):
        with pytest.raises(Unauthorized):
            keys.resolve("bsk_made_up")
    assert engine.gets == 3
