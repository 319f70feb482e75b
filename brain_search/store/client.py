"""OpenSearch client factory: one pooled client per process, built from the settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import orjson
from opensearchpy import OpenSearch, Transport
from opensearchpy.exceptions import SerializationError
from opensearchpy.serializer import JSONSerializer

from brain_search.config import Settings
from brain_search.store.http import EngineConnection


class OrjsonSerializer(JSONSerializer):
    """opensearch-py's JSON serializer with orjson parsing the responses.

    A recall's ``_msearch`` answer is ~30 KB of hits; the standard ``json`` parser was the largest
    Python cost of reading it (~0.4 ms of the API's CPU per recall). Requests are still encoded
    by the stock serializer (it knows dates, decimals and numpy); the recall's own NDJSON body is
    built with orjson before it reaches the client."""

    def loads(self, s: str | bytes) -> Any:
        try:
            return orjson.loads(s)
        except orjson.JSONDecodeError as e:
            # orjson refuses what the standard parser reads (a lone surrogate's escape, kept by
            # a write before the API refused those): one such document must not make a whole
            # answer unreadable (the reconciler's pass over every tenant's tasks, issue 54)
            try:
                return json.loads(s)
            except ValueError:
                raise SerializationError(s, e) from e


_COUNTER: ContextVar[list[int] | None] = ContextVar("brain_engine_requests", default=None)


class CountingTransport(Transport):
    """opensearch-py's transport, counting the requests made inside ``counted_requests``."""

    def perform_request(self, *args: Any, **kwargs: Any) -> Any:
        box = _COUNTER.get()
        if box is not None:
            box[0] += 1
        return super().perform_request(*args, **kwargs)


@contextmanager
def counted_requests() -> Iterator[list[int]]:
    """``box[0]``: the engine requests a client of ``make_client`` made in this context so far
    (this thread's work: a recall's round trips). A client built otherwise counts nothing."""
    box = [0]
    token = _COUNTER.set(box)
    try:
        yield box
    finally:
        _COUNTER.reset(token)


@contextmanager
def uncounted() -> Iterator[None]:
    """Requests that ``counted_requests`` leaves out: a cache's occasional refresh (the tenant
    placement's, at most every 2 s) is no round trip of the recall that happened to make it."""
    token = _COUNTER.set(None)
    try:
        yield
    finally:
        _COUNTER.reset(token)


def make_client(settings: Settings) -> OpenSearch:
    auth = None
    if settings.opensearch_user and settings.opensearch_password:
        auth = (settings.opensearch_user, settings.opensearch_password.get_secret_value())
    return OpenSearch(
        hosts=[u.strip() for u in settings.opensearch_url.split(",")],
        http_auth=auth,
        timeout=settings.opensearch_timeout_s,
        # opensearch-py's keyword is pool_maxsize; an unknown `maxsize` is silently ignored and
        # leaves a pool of ONE connection: every concurrent request then opens and discards one
        pool_maxsize=settings.opensearch_pool_size,
        retry_on_timeout=False,
        http_compress=False,
        verify_certs=settings.opensearch_verify_certs,
        ca_certs=str(settings.opensearch_ca_certs) if settings.opensearch_ca_certs else None,
        ssl_show_warn=settings.opensearch_verify_certs,
        serializer=OrjsonSerializer(),
        transport_class=CountingTransport,
        connection_class=EngineConnection,
    )
