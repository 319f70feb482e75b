"""The API's fast paths: orjson response parsing and the key cache read on the event loop."""

from __future__ import annotations

import time
from typing import Any

import pytest
from opensearchpy.exceptions import SerializationError

from brain_search.config import Settings
from brain_search.store.client import OrjsonSerializer
from brain_search.tenancy.auth import KeyStore, hash_key
from brain_search.tenancy.caller import Caller


def test_orjson_serializer_parses_like_json() -> None:
    s = OrjsonSerializer()
    body = '{"responses": [{"hits": {"hits": [{"_id": "a", "_score": 1.25, "fields": {"cosine": [0.1]}}]}}]}'
    assert s.loads(body) == {
        "responses": [{"hits": {"hits": [{"_id": "a", "_score": 1.25, "fields": {"cosine": [0.1]}}]}}]
    }
    assert s.loads(body.encode()) == s.loads(body)


def test_orjson_serializer_raises_the_clients_error() -> None:
    with pytest.raises(SerializationError):
        OrjsonSerializer().loads("{not json")


class _NoClient:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the cache read must not call OpenSearch ({name})")


def _store() -> KeyStore:
    return KeyStore(_NoClient(), Settings())  # type: ignore[arg-type]


def test_key_cache_answers_only_fresh_entries() -> None:
    store = _store()
    assert store.cached(None) is None
    assert store.cached("bk_unknown") is None
    store._cache.put(hash_key("bk_fresh"), (Caller("tenant-a", "lena", read_only=True), time.monotonic() + 60))
    store._cache.put(hash_key("bk_stale"), (Caller("tenant-b"), time.monotonic() - 1))
    assert store.cached("bk_fresh") == "tenant-a"
    assert store.cached_caller("bk_fresh") == Caller("tenant-a", "lena", read_only=True)  # the key's user with it
    assert store.cached("bk_stale") is None
