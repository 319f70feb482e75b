"""Measure what one memory costs on disk and to embed (the figures of docs/operations.md).

Indexes N synthetic memories (realistic lengths, real all-MiniLM-L6-v2 vectors) into a scratch
index of one shard and no replica under its own prefix, force-merges it to one segment (the steady
state), and reads the index's size per Lucene file type from ``_stats``. The index is deleted
afterwards unless ``--keep``.

    .venv/bin/python lab/scripts/measure_footprint.py --prefix bt-deploy-size --count 10000

Uses BRAIN_OPENSEARCH_URL (default: the local node). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from typing import Any

from brain_search.config import load_settings
from brain_search.encoders.factory import make_embedder
from brain_search.store.client import make_client
from brain_search.store.documents import build_memory_doc, memory_doc_id
from brain_search.store.templates import delete_indices, install_memories_index

# Lucene file extensions → what they hold (Lucene 10 codecs as used by OpenSearch 3.x)
FILE_KINDS = {
    "vec": "vectors (raw float32)",
    "vex": "HNSW graph",
    "vem": "vectors + graph metadata",
    "veq": "quantized vectors",
    "vemq": "quantized vectors metadata",
    "fdt": "stored fields (_source, _id)",
    "fdx": "stored fields index",
    "fdm": "stored fields metadata",
    "tim": "term dictionary",
    "tip": "term index",
    "tmd": "term metadata",
    "doc": "postings: doc ids + freqs",
    "pos": "postings: positions",
    "pay": "postings: payloads/offsets",
    "psm": "postings: metadata",
    "nvd": "norms",
    "nvm": "norms metadata",
    "dvd": "doc values",
    "dvm": "doc values metadata",
    "kdd": "points (dates)",
    "kdi": "points index",
    "kdm": "points metadata",
}

SUBJECTS = ["I", "We", "Jacob", "Maria", "The team", "My manager", "Our investor", "The client", "Sam", "Priya"]
VERBS = ["decided", "mentioned", "agreed", "argued", "noticed", "promised", "asked", "suggested", "wrote", "said"]
TOPICS = [
    "the equity split for the founders",
    "the pricing page redesign",
    "a salary band for the CTO role",
    "the Q3 roadmap and hiring plan",
    "vesting schedules with a one-year cliff",
    "moving the database to managed OpenSearch",
    "the marathon training plan for April",
    "a recipe for garlic and basil pasta",
    "the onboarding flow for new tenants",
    "renewing the office lease in Berlin",
    "backups and snapshot retention",
    "the puppy's vet appointment",
]
TAILS = [
    "because the numbers did not add up",
    "after the call on Tuesday",
    "and we should revisit it next week",
    "which surprised everyone in the meeting",
    "so I wrote it down to remember the details",
    "but only if the budget allows it",
    "with a deadline at the end of the month",
    "and the follow-up is on me",
]


def synthetic_memory(rng: random.Random) -> str:
    """One to three sentences, about 60-400 characters, like a note taken from a conversation."""
    sentences = []
    for _ in range(rng.choice([1, 1, 2, 2, 2, 3])):
        s = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(TOPICS)} {rng.choice(TAILS)}"
        if rng.random() < 0.4:
            s += f", around {rng.randint(2, 95)}% of the {rng.choice(['budget', 'shares', 'time', 'users'])}"
        sentences.append(s + ".")
    return " ".join(sentences)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", default="bt-deploy-size")
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    settings = load_settings(index_prefix=args.prefix, shards=1, replicas=0, routing_partition_size=1)
    client = make_client(settings)
    embedder = make_embedder(settings)
    rng = random.Random(42)
    texts = [synthetic_memory(rng) for _ in range(args.count)]

    t0 = time.perf_counter()
    vectors = embedder.encode(texts)
    embed_s = time.perf_counter() - t0

    delete_indices(client, settings)
    index = install_memories_index(client, settings, embedder.dimension)
    t0 = time.perf_counter()
    for start in range(0, args.count, 500):
        lines: list[dict[str, Any]] = []
        for i in range(start, min(start + 500, args.count)):
            tenant = f"tenant-{i % 50}"
            mid = f"m{i:07d}"
            lines.append({"index": {"_id": memory_doc_id(tenant, mid), "routing": tenant}})
            lines.append(
                build_memory_doc(
                    tenant_id=tenant,
                    memory_id=mid,
                    content=texts[i],
                    embedding=vectors[i],
                    embedding_model=embedder.name,
                    node_id=f"n{i % 200}",
                    node_path=f"tenant/area-{i % 20}/topic-{i % 200}",
                    timestamp=f"2026-01-{1 + i % 28:02d}T10:00:00Z",
                    source="conversation",
                    conversation_id=f"c{i // 20}",
                )
            )
        resp = client.bulk(body=lines, index=index, params={"request_timeout": 120})
        if resp["errors"]:
            raise SystemExit(json.dumps([it for it in resp["items"] if it["index"].get("error")][:3]))
    index_s = time.perf_counter() - t0
    client.indices.refresh(index=index)
    t0 = time.perf_counter()
    client.indices.forcemerge(index=index, params={"max_num_segments": 1, "request_timeout": 600})
    merge_s = time.perf_counter() - t0
    # the merged-away segments stay on disk (and in the store size) until the next refresh and
    # flush release them
    client.indices.refresh(index=index)
    client.indices.flush(index=index)

    stats = client.indices.stats(index=index, params={"include_segment_file_sizes": "true"})
    prim = stats["indices"][index]["primaries"]
    docs = prim["docs"]["count"]
    size = prim["store"]["size_in_bytes"]
    by_kind: dict[str, int] = defaultdict(int)
    for ext, v in prim["segments"].get("file_sizes", {}).items():
        by_kind[FILE_KINDS.get(ext, ext)] += v["size_in_bytes"]
    settings_resp = client.indices.get_settings(index=index, params={"include_defaults": "true"})[index]
    knn_defaults = settings_resp.get("defaults", {}).get("index", {}).get("knn", {})
    knn_set = settings_resp["settings"]["index"].get("knn", {})
    text_chars = sum(len(t) for t in texts)
    out = {
        "documents": docs,
        "segments": prim["segments"]["count"],
        "store_bytes": size,
        "bytes_per_memory": round(size / docs, 1),
        "avg_text_chars": round(text_chars / len(texts), 1),
        "bytes_per_memory_by_kind": {k: round(v / docs, 1) for k, v in sorted(by_kind.items(), key=lambda x: -x[1])},
        "knn_settings": {"set": knn_set, "defaults": knn_defaults},
        "embedding_backend": embedder.backend,
        "embed_per_s": round(args.count / embed_s, 1),
        "bulk_index_per_s": round(args.count / index_s, 1),
        "forcemerge_s": round(merge_s, 1),
    }
    print(json.dumps(out, indent=2))
    if not args.keep:
        delete_indices(client, settings)


if __name__ == "__main__":
    main()
