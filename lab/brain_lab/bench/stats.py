"""Small pure helpers: percentiles and the index footprint read from OpenSearch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from opensearchpy import OpenSearch

VECTOR_FILES = ("vec", "vex", "vem", "veq", "vemq", "vemf")


def percentiles(values: Sequence[float], qs: Sequence[float] = (50, 95, 99)) -> dict[str, float]:
    """``{"p50": …, "p95": …, "p99": …}`` (numpy's linear interpolation); zeros when empty."""
    if not values:
        return {f"p{q:g}": 0.0 for q in qs}
    arr = np.asarray(values, dtype=float)
    return {f"p{q:g}": float(np.percentile(arr, q)) for q in qs}


def index_footprint(client: OpenSearch, index: str) -> dict[str, Any]:
    """Disk, Lucene vector files (HNSW graph + raw vectors), heap and the k-NN plugin's graph memory.

    The lucene engine keeps its HNSW graph in the index files (``.vex`` graph, ``.vec`` vectors),
    read through the page cache, not in the k-NN plugin's native cache: its
    ``graph_memory_usage`` stays 0 for lucene and counts faiss/nmslib graphs only.
    """
    stats = client.indices.stats(
        index=index, metric="store,segments,docs", params={"include_segment_file_sizes": "true"}
    )
    prim = stats["indices"][index]["primaries"]
    files = prim["segments"].get("file_sizes", {})
    vector_bytes = sum(int(files[ext]["size_in_bytes"]) for ext in VECTOR_FILES if ext in files)
    nodes = client.nodes.stats(metric="jvm")
    heap_used = sum(int(n["jvm"]["mem"]["heap_used_in_bytes"]) for n in nodes["nodes"].values())
    heap_max = sum(int(n["jvm"]["mem"]["heap_max_in_bytes"]) for n in nodes["nodes"].values())
    knn = client.transport.perform_request("GET", "/_plugins/_knn/stats")
    knn_kb = sum(float(n.get("graph_memory_usage", 0) or 0) for n in knn.get("nodes", {}).values())
    return {
        "docs": int(prim["docs"]["count"]),
        "segments": int(prim["segments"]["count"]),
        "disk_bytes": int(prim["store"]["size_in_bytes"]),
        "vector_files_bytes": vector_bytes,
        "vector_files": {ext: int(files[ext]["size_in_bytes"]) for ext in VECTOR_FILES if ext in files},
        "segments_heap_bytes": int(prim["segments"].get("memory_in_bytes", 0)),
        "node_heap_used_bytes": heap_used,
        "node_heap_max_bytes": heap_max,
        "knn_graph_memory_kb": knn_kb,
    }
