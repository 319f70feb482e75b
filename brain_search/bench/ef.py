"""HNSW ``ef_search`` against exact kNN: recall@k and latency of the kNN sub-search alone.

Exact neighbours come from a ``script_score`` (``knn_score``, the k-NN plugin's brute force)
under the same tenant filter; the approximate ones from the pipeline's own kNN sub-search
(``queries.knn_search``) with the ``ef_search`` under test.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from opensearchpy import OpenSearch

from brain_search.bench.stats import percentiles
from brain_search.retrieval import queries


def exact_knn_body(vector: Sequence[float], k: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "size": k,
        "_source": False,
        "query": {
            "script_score": {
                "query": {"bool": {"filter": filters}},
                "script": {
                    "source": "knn_score",
                    "lang": "knn",
                    "params": {
                        "field": "embedding",
                        "query_value": [float(x) for x in vector],
                        "space_type": "cosinesimil",
                    },
                },
            }
        },
    }


@dataclass
class EfResult:
    ef: int
    recall_at_k: float
    p50_ms: float
    p95_ms: float


def sweep(
    client: OpenSearch,
    alias: str,
    probes: Sequence[tuple[str, np.ndarray]],
    efs: Sequence[int],
    k: int,
) -> list[EfResult]:
    """For each ef: mean recall@k against exact kNN and the wall time of the kNN search."""
    exact: list[set[str]] = []
    for tenant, vec in probes:
        r = client.search(
            index=alias, routing=tenant, body=exact_knn_body(vec.tolist(), k, queries.scope_filter(tenant))
        )
        exact.append({h["_id"] for h in r["hits"]["hits"]})
    out = []
    for ef in efs:
        recalls, times = [], []
        for (tenant, vec), truth in zip(probes, exact, strict=True):
            body = queries.knn_search(vec.tolist(), k, [], [], queries.scope_filter(tenant), ef)
            body["_source"] = False
            t0 = time.perf_counter()
            r = client.search(index=alias, routing=tenant, body=body)
            times.append((time.perf_counter() - t0) * 1000.0)
            got = {h["_id"] for h in r["hits"]["hits"]}
            recalls.append(len(got & truth) / max(len(truth), 1))
        p = percentiles(times, (50, 95))
        out.append(EfResult(ef, float(np.mean(recalls)), p["p50"], p["p95"]))
    return out
