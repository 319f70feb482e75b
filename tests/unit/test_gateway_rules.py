"""The engine roles' rules (gateway/rules.py), read in Python as nginx enforces them."""

from __future__ import annotations

import re

import pytest

from brain_search.gateway.rules import (
    WORKER_BULK_RESPONSE,
    WORKER_MGET_RESPONSE,
    allowed,
    render_map,
    render_upstream_map,
    upstream_uri,
)

P = re.escape("brain")


@pytest.mark.parametrize(
    ("user", "method", "uri", "ok"),
    [
        ("admin", "PUT", "/brain-memories-v1", True),
        ("admin", "DELETE", "/brain-*", True),
        ("api", "POST", "/brain-memories/_msearch", True),
        ("api", "GET", "/brain-keys/_doc/abc%3A1?routing=acme", True),
        ("api", "POST", "/brain-memories/_bulk?refresh=wait_for", True),
        ("api", "POST", "/brain-*/_refresh", True),
        ("api", "POST", "/brain-memories/_delete_by_query?conflicts=proceed", True),
        ("api", "PUT", "/brain-memories-v2", False),  # no index creation
        ("api", "DELETE", "/brain-memories-v1", False),  # no index deletion
        ("api", "PUT", "/brain-memories-v1/_mapping", False),
        ("api", "POST", "/_msearch", False),  # no request without an index in its path
        ("api", "POST", "/other-memories/_search", False),  # another prefix
        ("api", "POST", "/brain-%6Beys/_search", False),  # an encoded name matches nothing
        ("api", "PUT", "/_cluster/settings", False),
        ("worker", "POST", "/brain-memories/_bulk", True),
        ("worker", "POST", "/brain-dead-letters/_bulk?refresh=wait_for", True),
        ("worker", "POST", "/brain-memories/_mget?_source=tombstone_of%2Cmemory_id", True),
        ("worker", "POST", "/brain-memories/_mget?_source=content", False),
        ("worker", "POST", "/brain-memories/_mget", False),
        # the worker's writes cannot ask for documents back nor widen what the answer holds
        ("worker", "POST", "/brain-memories/_bulk?_source=true", False),
        ("worker", "POST", "/brain-memories/_bulk?refresh=wait_for&filter_path=items", False),
        ("worker", "POST", "/brain-memories/_mget?_source=tombstone_of%2Cmemory_id&filter_path=docs", False),
        ("worker", "GET", "/brain-memories-v1/_mapping", True),
        ("worker", "PUT", "/brain-memories-v1/_mapping", False),
        ("worker", "POST", "/brain-memories/_search", False),  # write-only on memories
        ("worker", "POST", "/brain-keys/_bulk", False),
        ("worker", "GET", "/brain-keys/_doc/x", False),
        ("worker", "POST", "/brain-ingest-tasks/_update/t1?retry_on_conflict=5", True),
        ("worker", "HEAD", "/brain-memories-v1", True),
        ("nobody", "GET", "/", False),
    ],
)
def test_role_rules(user: str, method: str, uri: str, ok: bool) -> None:
    assert allowed(P, user, method, uri) is ok


def test_rendered_map_holds_every_rule_and_denies_by_default() -> None:
    text = render_map(P)
    assert text.startswith('map "$remote_user $request_method $request_uri" $brain_allowed {')
    assert "    default 0;" in text
    assert text.count('"~^api ') > 5 and text.count('"~^worker ') > 5


@pytest.mark.parametrize(
    ("user", "method", "uri", "forwarded"),
    [
        ("worker", "POST", "/brain-memories/_bulk", f"/brain-memories/_bulk?filter_path={WORKER_BULK_RESPONSE}"),
        (
            "worker",
            "POST",
            "/brain-dead-letters/_bulk?refresh=wait_for",
            f"/brain-dead-letters/_bulk?refresh=wait_for&filter_path={WORKER_BULK_RESPONSE}",
        ),
        (
            "worker",
            "POST",
            "/brain-memories/_mget?_source=tombstone_of%2Cmemory_id",
            f"/brain-memories/_mget?_source=tombstone_of%2Cmemory_id&filter_path={WORKER_MGET_RESPONSE}",
        ),
        ("api", "POST", "/brain-memories/_bulk", "/brain-memories/_bulk"),  # the API's answers are whole
        ("worker", "POST", "/brain-ingest-tasks/_search", "/brain-ingest-tasks/_search"),
    ],
)
def test_the_worker_reads_pinned_answers(user: str, method: str, uri: str, forwarded: str) -> None:
    """Issue 54 item 9: what the worker's ``_mget`` and ``_bulk`` answer is pinned by the gateway
    (``filter_path``): no ``_source`` beyond the tombstone fields, no ``get`` of an update."""
    assert upstream_uri(P, user, method, uri) == forwarded
    assert "docs._source.content" not in WORKER_MGET_RESPONSE and ".get" not in WORKER_BULK_RESPONSE
    assert "filter_path=" in render_upstream_map(P) and "default $request_uri;" in render_upstream_map(P)
