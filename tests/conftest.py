"""Shared fixtures. The stack fixtures are session-scoped and lazy: unit tests start nothing.

The real stack: a local OpenSearch with the k-NN plugin (reused when one of ours already runs on
the configured port, otherwise started here and stopped at the end) and a real Redis. Tests use
their own index prefix, so a developer's data under the default prefix is never touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from opensearchpy import OpenSearch

from brain_search.config import Settings, load_settings
from brain_search.embedding import SentenceTransformerEmbedder, make_embedder
from brain_search.local_redis import LocalRedis
from brain_search.store.client import make_client
from brain_search.store.local_node import LocalCluster
from brain_search.store.templates import delete_indices, install_memories_index

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _quiet(msg: str) -> None:
    print(f"[stack] {msg}")


@pytest.fixture(scope="session")
def settings() -> Settings:
    return load_settings(index_prefix=os.environ.get("BRAIN_TEST_INDEX_PREFIX", "brain-test"))


@pytest.fixture(scope="session")
def opensearch_cluster(settings: Settings) -> Iterator[LocalCluster]:
    cluster = LocalCluster(settings, log=_quiet)
    started_here = not cluster.is_ours_running()
    cluster.start()
    yield cluster
    if started_here:
        cluster.stop()


@pytest.fixture(scope="session")
def stack_settings(settings: Settings, opensearch_cluster: LocalCluster) -> Settings:
    return settings.model_copy(update={"opensearch_url": opensearch_cluster.url})


@pytest.fixture(scope="session")
def client(stack_settings: Settings) -> OpenSearch:
    return make_client(stack_settings)


@pytest.fixture
def memories_index(client: OpenSearch, stack_settings: Settings) -> Iterator[str]:
    """A freshly created, empty memories index (wiped before each test)."""
    delete_indices(client, stack_settings)
    yield install_memories_index(client, stack_settings, stack_settings.embedding_dimension)


@pytest.fixture(scope="session")
def redis_url(settings: Settings) -> Iterator[str]:
    redis = LocalRedis(settings, log=_quiet)
    started_here = not redis.running()
    url = redis.start()
    yield url
    if started_here:
        redis.stop()


@pytest.fixture(scope="session")
def embedder(settings: Settings) -> SentenceTransformerEmbedder:
    return make_embedder(settings)
