"""Index templates from ``index_templates/`` installed idempotently at startup.

The JSON files hold what does not depend on settings; this module fills in the index pattern,
shard layout, routing partition and the kNN method (engine, dimension, HNSW parameters).
"""

from __future__ import annotations

import copy
import json
import logging
from importlib.resources import files
from pathlib import Path
from typing import Any

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.encoders.base import check_index_encoder, encoder_info, index_meta
from brain_search.index_names import IndexNames
from brain_search.store.views import fill_views

log = logging.getLogger(__name__)
DERIVED_SOURCE = "index.knn.derived_source.enabled"  # off by default: k-NN 3.5.0.0's reader race


def load_template(name: str, directory: Path | None = None) -> dict[str, Any]:
    """``index_templates/<name>.json``: package data of the top-level ``index_templates`` package
    (shipped inside the wheel), or of ``directory``."""
    source = (directory / f"{name}.json") if directory else files("index_templates").joinpath(f"{name}.json")
    body = json.loads(source.read_text())
    body.pop("_comment", None)
    return body


def memories_template(settings: Settings, dimension: int, directory: Path | None = None) -> dict[str, Any]:
    """The memories index template body for these settings (pure: no I/O beyond the JSON file)."""
    body = copy.deepcopy(load_template("memories", directory))
    body["index_patterns"] = [IndexNames.of(settings).memories_pattern]
    index_settings = body["template"]["settings"]["index"]
    index_settings["number_of_shards"] = settings.shards
    index_settings["number_of_replicas"] = settings.replicas
    index_settings[DERIVED_SOURCE.removeprefix("index.")] = settings.knn_derived_source
    if settings.routing_partition_size > 1:
        if settings.routing_partition_size >= settings.shards:
            raise ValueError("routing_partition_size must be smaller than the number of shards")
        index_settings["routing_partition_size"] = settings.routing_partition_size
        # without it the engine routes by its default routing shards (a multiple of the shards,
        # kept for a later _split) and the partition has no effect: every tenant on one shard
        # (OpenSearch 3.5.0; measured by `brain-search bench shards`, issue 56). With it a tenant
        # spreads over the partition's shards, as the setting says; the index can then not be split
        index_settings["number_of_routing_shards"] = settings.shards
    body["template"]["mappings"]["_meta"] = index_meta(encoder_info(settings.embedding_model))
    emb = body["template"]["mappings"]["properties"]["embedding"]
    emb["dimension"] = dimension
    emb["method"] = {
        "name": "hnsw",
        "engine": settings.knn_engine,
        "space_type": "cosinesimil",
        "parameters": {"m": settings.hnsw_m, "ef_construction": settings.hnsw_ef_construction},
    }
    return body


# Fields newer than the first memories indices, put on an existing index at install.
ADDED_FIELDS = (
    "tombstone_of",
    "deleted_at",
    "supersedes",
    "valid_until",
    "view",
    "view_dv",
    "view_v",
    "moved_from",
    "user_id",
    "agent_id",
)


def install_memories_index(client: OpenSearch, settings: Settings, dimension: int) -> str:
    """Put the template (idempotent) and create the first concrete index behind the read alias
    if the alias does not exist yet. Returns the concrete index name the alias points to."""
    client.indices.put_index_template(
        name=IndexNames.of(settings).memories_template, body=memories_template(settings, dimension)
    )
    alias = settings.memories_alias
    if client.indices.exists_alias(name=alias):
        index = next(iter(client.indices.get_alias(name=alias)))
        # fields added since the index was created (additive: an existing field is never changed)
        props = memories_template(settings, dimension)["template"]["mappings"]["properties"]
        added = {"properties": {f: props[f] for f in ADDED_FIELDS}}
        client.indices.put_mapping(index=index, body=added)
        # and on every tenant's own index (store/placement.py), made from the template before them
        own = f"{alias}-tenant-*"
        client.indices.put_mapping(index=own, body=added, params={"allow_no_indices": "true"}, ignore=[404])
        if not has_tenant_bm25_fields(client, index):
            add_tenant_bm25_fields(client, index, memories_template(settings, dimension))
        fill_views(client, index)  # once: memories stored before recall views get theirs
        record_encoder(client, index, settings)
        if derived_source(client, index) and not settings.knn_derived_source:
            log.warning(
                "memories index %s keeps k-NN derived source on (a static setting of its creation); k-NN 3.5.0.0"
                " can fail fetches from it with already_closed_exception: re-index it (docs/operations.md)",
                index,
            )
        return index
    index = settings.memories_index
    if not client.indices.exists(index=index):
        client.indices.create(
            index=index,
            body={"aliases": {alias: {"is_write_index": True}}},
            params={"wait_for_active_shards": "1"},
        )
    else:
        client.indices.put_alias(index=index, name=alias, body={"is_write_index": True})
    return index


def index_encoder_meta(client: OpenSearch, index: str) -> dict[str, Any]:
    """The ``_meta`` of ``index``'s mapping (``{}`` where it has none)."""
    mapping = client.indices.get_mapping(index=index)
    return dict(next(iter(mapping.values()))["mappings"].get("_meta") or {})


def record_encoder(client: OpenSearch, index: str, settings: Settings) -> None:
    """Refuse ``settings``' encoder where ``index`` records another; record it on an index made
    before the record (all-MiniLM-L6-v2's vectors: refused for any other encoder)."""
    info = encoder_info(settings.embedding_model)
    meta = index_encoder_meta(client, index)
    check_index_encoder(index, meta, info)
    if "encoder" not in meta:
        client.indices.put_mapping(index=index, body={"_meta": {**meta, **index_meta(info)}})


def has_tenant_bm25_fields(client: OpenSearch, index: str) -> bool:
    """Whether ``index`` maps ``content.tf`` and ``content.len`` (what the tenant's own BM25 reads)."""
    mapping = client.indices.get_mapping(index=index)
    props = next(iter(mapping.values()))["mappings"]["properties"]
    fields = props.get("content", {}).get("fields", {})
    return "tf" in fields and "len" in fields


def add_tenant_bm25_fields(client: OpenSearch, index: str, template: dict[str, Any]) -> str:
    """Give a memories index made before tenant BM25 its ``brain_tf`` similarity (a static
    setting: the index is closed for a moment), the ``content.tf`` and ``content.len`` fields, and
    start an update-by-query that fills them for the memories already stored (a task: until it
    ends, those memories match no lexical clause). Returns the task id."""
    similarity = template["template"]["settings"]["index"]["similarity"]
    content = template["template"]["mappings"]["properties"]["content"]
    log.warning("memories index %s: adding content.tf / content.len for the tenant's BM25 (closing it briefly)", index)
    client.indices.close(index=index, params={"wait_for_active_shards": "1"})
    try:
        client.indices.put_settings(index=index, body={"index": {"similarity": similarity}})
    finally:
        client.indices.open(index=index, params={"wait_for_active_shards": "1"})
    client.cluster.health(index=index, params={"wait_for_status": "yellow", "request_timeout": 60})
    client.indices.put_mapping(index=index, body={"properties": {"content": content}})
    task = client.update_by_query(
        index=index, params={"conflicts": "proceed", "wait_for_completion": "false", "refresh": "true"}
    )
    log.warning("memories index %s: filling the new fields for stored memories (task %s)", index, task.get("task"))
    return str(task.get("task"))


def delete_indices(client: OpenSearch, settings: Settings) -> None:
    """Drop every index and template of this prefix (tests, `brain-search reset`)."""
    everything = IndexNames.of(settings).everything
    client.indices.delete(index=everything, params={"expand_wildcards": "all"})
    client.indices.delete_index_template(name=everything, ignore=[404])


def derived_source(client: OpenSearch, index: str) -> bool:
    """Whether ``index`` leaves its vectors out of the stored ``_source`` (k-NN's derived source,
    on by default in k-NN 3.x)."""
    found = client.indices.get_settings(
        index=index, name=DERIVED_SOURCE, params={"include_defaults": "true", "flat_settings": "true"}
    )
    entry: dict[str, Any] = found.get(index) or next(iter(found.values()), {})
    value = (entry.get("settings") or {}).get(DERIVED_SOURCE, (entry.get("defaults") or {}).get(DERIVED_SOURCE))
    return str(value).lower() == "true"
