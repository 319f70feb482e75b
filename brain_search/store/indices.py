"""Every index name of a deployment, from its one prefix, and the one place that installs them.

A deployment (or a test run, or an evaluation dataset) owns ``<prefix>-*``:

- ``<prefix>-memories``: the read/write alias over ``<prefix>-memories-v1`` (a re-index for a new
  model is an alias swap), created from the ``<prefix>-memories`` index template;
- ``<prefix>-tenants``, ``-keys``: tenants and API keys (``auth.KeyStore``);
- ``<prefix>-nodes``, ``-node-tasks``: the knowledge graph and its move/delete tasks (``graph``);
- ``<prefix>-ingest-tasks``: durable ingest task records (``ingest.task_records``);
- ``<prefix>-dead-letters``: memories that could not be indexed (``ingest.dead_letters``);
- ``<prefix>-memory-history``: earlier versions of updated memories (``ingest.history``);
- ``<prefix>-audit``: changes to tenants and keys (``audit``);
- ``<prefix>-feedback``: what recalls returned and the feedback on them (``feedback``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opensearchpy import OpenSearch

from brain_search.encoders.base import check_index_encoder, encoder_info
from brain_search.index_names import IndexNames as IndexNames  # re-exported: the names and their installer
from brain_search.store import mappings
from brain_search.store.small_index import ensure_small_index
from brain_search.store.templates import index_encoder_meta, install_memories_index

if TYPE_CHECKING:
    from brain_search.config import Settings


def install_all(client: OpenSearch, settings: Settings, dimension: int | None = None) -> str:
    """Install every index of ``settings``' prefix (idempotent): the memories template, index and
    alias, and each small index. Returns the concrete memories index the alias points to."""
    index = install_memories_index(client, settings, dimension or settings.embedding_dimension)
    for name, mapping, index_settings in small_indices(IndexNames.of(settings)):
        ensure_small_index(client, name, mapping, **index_settings)
    return index


def small_indices(names: IndexNames) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every small index of a prefix: (name, mapping, extra index settings). ``install_all``
    creates them and ``verify_all`` checks them from this one list."""
    return [
        (names.tenants, mappings.TENANTS, {}),
        (names.keys, mappings.KEYS, {}),
        (names.nodes, mappings.NODES, {"analysis": mappings.PATH_ANALYSIS}),
        (names.node_tasks, mappings.NODE_TASKS, {}),
        (names.ingest_tasks, mappings.INGEST_TASKS, {}),
        (names.dead_letters, mappings.DEAD_LETTERS, {}),
        (names.memory_history, mappings.MEMORY_HISTORY, {}),
        (names.audit, mappings.AUDIT, {}),
        (names.feedback, mappings.FEEDBACK, {}),
    ]


def verify_all(client: OpenSearch, settings: Settings) -> str:
    """``index_setup = "verify"``: check that every index of the prefix exists (HEAD requests, which
    the api and worker roles may make) without creating or changing any. Returns the concrete
    memories index; raises ``SetupError`` naming what is missing."""
    from brain_search.errors import SetupError

    names = IndexNames.of(settings)
    small = [name for name, _, _ in small_indices(names)]
    missing = [i for i in (names.memories_alias, *small) if not client.indices.exists(index=i)]
    if missing:
        raise SetupError(
            f"indices missing: {', '.join(missing)}; install them once with the admin role "
            "(`brain-search indices install`, or the chart's index-setup job)"
        )
    index = next(iter(client.indices.get_alias(name=names.memories_alias)))
    check_index_encoder(index, index_encoder_meta(client, index), encoder_info(settings.embedding_model))
    return index


def ensure_indices(client: OpenSearch, settings: Settings, dimension: int | None = None) -> str:
    """What a process does with the indices at start: install them, or verify them (``index_setup``)."""
    if settings.index_setup == "verify":
        return verify_all(client, settings)
    return install_all(client, settings, dimension)
