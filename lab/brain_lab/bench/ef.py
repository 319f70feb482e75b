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

from brain_lab.bench.corpus import original_id
from brain_lab.bench.stats import percentiles
from brain_search.retrieval.engine import queries
from brain_search.store.scope import scope_filter


def exact_knn_body(vector: Sequence[float], k: int, filters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "size": k,
        "_source": ["memory_id"],
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
    text_recall_at_k: float
    """recall of the distinct texts: a recycled corpus holds many near-identical copies of each
    text (cosine ≈ 0.98 to each other), and which copies rank in the exact top k is noise"""


def texts_of(hits: list[dict[str, Any]]) -> set[str]:
    return {original_id(str(h["_source"]["memory_id"])) for h in hits}


def sweep(
    client: OpenSearch,
    alias: str,
    probes: Sequence[tuple[str, np.ndarray]],
    efs: Sequence[int],
    k: int,
) -> list[EfResult]:
    """For each ef: mean recall@k against exact kNN and the wall time of the kNN search."""
    exact: list[set[str]] = []
    exact_texts: list[set[str]] = []
    for tenant, vec in probes:
        r = client.search(index=alias, routing=tenant, body=exact_knn_body(vec.tolist(), k, scope_filter(tenant)))
        exact.append({h["_id"] for h in r["hits"]["hits"]})
        exact_texts.append(texts_of(r["hits"]["hits"]))
    out = []
    for ef in efs:
        recalls, text_recalls, times = [], [], []
        for (tenant, vec), truth, truth_texts in zip(probes, exact, exact_texts, strict=True):
            body = queries.knn_search(vec.tolist(), k, [], [], filters=scope_filter(tenant), ef_search=ef)
            body["_source"] = ["memory_id"]
            t0 = time.perf_counter()
            r = client.search(index=alias, routing=tenant, body=body)
            times.append((time.perf_counter() - t0) * 1000.0)
            got = {h["_id"] for h in r["hits"]["hits"]}
            recalls.append(len(got & truth) / max(len(truth), 1))
            text_recalls.append(len(texts_of(r["hits"]["hits"]) & truth_texts) / max(len(truth_texts), 1))
        p = percentiles(times, (50, 95))
        out.append(EfResult(ef, float(np.mean(recalls)), p["p50"], p["p95"], float(np.mean(text_recalls))))
    return out
