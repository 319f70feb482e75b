"""KeyStore's caches (pure: a counting stand-in for the engine's GET)."""

from __future__ import annotations

from typing import Any

import pytest
from opensearchpy import NotFoundError

from brain_search.config import load_settings
from brain_search.errors import Unauthorized
from brain_search.tenancy.auth import KeyStore, hash_key


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


def test_a_revoked_or_expired_key_costs_one_engine_lookup_not_one_per_request() -> None:
    """Issue 54 item 7: revoked and expired keys are cached as refused, like unknown ones."""
    engine = _Engine(
        {
            hash_key("bsk_revoked"): {"tenant_id": "acme", "revoked": True},
            hash_key("bsk_expired"): {"tenant_id": "acme", "revoked": False, "expires_at": "2020-01-01T00:00:00+00:00"},
        }
    )
    keys = KeyStore(engine, load_settings())  # type: ignore[arg-type]
    for _ in range(50):
        with pytest.raises(Unauthorized, match="revoked API key"):
            keys.resolve("bsk_revoked")
    assert engine.gets == 1
    for _ in range(50):
        with pytest.raises(Unauthorized, match="expired API key"):
            keys.resolve("bsk_expired")
    assert engine.gets == 2


def test_a_revocation_takes_effect_within_the_positive_cache_ttl() -> None:
    """Caching refusals leaves the documented bound of a revocation made elsewhere as it was:
    a valid key is re-read once its ``cache_ttl_s`` has passed, and refused from then on."""
    doc: dict[str, Any] = {"tenant_id": "acme", "revoked": False}
    engine = _Engine({hash_key("bsk_k"): doc})
    keys = KeyStore(engine, load_settings(), cache_ttl_s=0.0)  # type: ignore[arg-type]
    assert keys.resolve("bsk_k") == "acme"
    doc["revoked"] = True  # revoked by another process
    with pytest.raises(Unauthorized, match="revoked API key"):
        keys.resolve("bsk_k")
    gets = engine.gets
    with pytest.raises(Unauthorized, match="revoked API key"):
        keys.resolve("bsk_k")
    assert engine.gets == gets


def test_the_key_cache_is_bounded() -> None:
    """Many tenants' keys keep the API's memory flat: the least recently used key leaves the cache
    past its bytes (and costs one lookup again), the newest stay (issues 56.4, 67.5)."""
    from brain_search.lru import entry_size
    from brain_search.tenancy.caller import Caller

    engine = _Engine({hash_key(f"bsk_{i}"): {"tenant_id": f"t{i}", "revoked": False} for i in range(5)})
    keys = KeyStore(engine, load_settings())  # type: ignore[arg-type]
    one = entry_size(hash_key("bsk_0"), (Caller("t0", None, False), 0.0))
    keys._cache.max_bytes = 3 * one + one // 2  # room for three keys
    for i in range(5):
        assert keys.resolve(f"bsk_{i}") == f"t{i}"
    assert len(keys._cache) == 3 and engine.gets == 5
    assert keys.resolve("bsk_4") == "t4" and engine.gets == 5  # kept
    assert keys.resolve("bsk_0") == "t0" and engine.gets == 6  # evicted: looked up again
