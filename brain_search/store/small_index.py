"""The small bookkeeping indices (tenants, keys, nodes, node tasks, ingest task records, dead
letters): one shard, a replica wherever a second node exists, a strict mapping, created once."""

from __future__ import annotations

from typing import Any

from opensearchpy import OpenSearch


def small_index_body(mapping: dict[str, Any], **index_settings: Any) -> dict[str, Any]:
    """The create-index body for ``mapping`` (``dynamic: strict`` added unless it says otherwise)."""
    settings: dict[str, Any] = {"index": {"number_of_shards": 1, "auto_expand_replicas": "0-1"}, **index_settings}
    return {"settings": settings, "mappings": {"dynamic": "strict", **mapping}}


def ensure_small_index(client: OpenSearch, index: str, mapping: dict[str, Any], **index_settings: Any) -> None:
    """Create ``index`` unless it exists (a concurrent creator's 400 is ignored); an existing one
    gets the fields added to ``mapping`` since it was created (additive put-mapping)."""
    if not client.indices.exists(index=index):
        client.indices.create(index=index, body=small_index_body(mapping, **index_settings), ignore=[400])
    else:
        client.indices.put_mapping(index=index, body={"properties": mapping["properties"]})
