"""Bring the local stack up: OpenSearch (k-NN) node(s), optional Redis, index templates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from brain_search.config import Settings
from brain_search.local.node import LocalCluster
from brain_search.local.redis_server import LocalRedis
from brain_search.store.client import make_client
from brain_search.store.indices import install_all


@dataclass
class StackInfo:
    opensearch_url: str
    opensearch_version: str
    cluster_health: dict
    plugins: list[str]
    memories_index: str
    redis_url: str | None


def start_stack(
    settings: Settings, nodes: int = 1, with_redis: bool = False, log: Callable[[str], None] = print
) -> StackInfo:
    cluster = LocalCluster(settings, nodes=nodes, log=log)
    health = cluster.start()
    client = make_client(settings.model_copy(update={"opensearch_url": cluster.url}))
    info = client.info()
    plugins = sorted({p["component"] for p in client.cat.plugins(format="json")})
    if "opensearch-knn" not in plugins:
        raise RuntimeError(f"the node at {cluster.url} runs without the k-NN plugin: {plugins}")
    index = install_all(client, settings)
    redis_url = LocalRedis(settings, log=log).start() if with_redis else None
    return StackInfo(cluster.url, info["version"]["number"], health, plugins, index, redis_url)
