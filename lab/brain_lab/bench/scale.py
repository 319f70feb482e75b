"""Cost against corpus size: for each size, load the corpus when missing, then recall p50/p95
(in-process, warm query vectors, so the figure is retrieval not the model), the bare engine's
``_msearch`` alone, and the index footprint. Writes ``scale.json`` and ``scale.png``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from brain_lab.bench.corpus import cached_embedder, corpus_settings, load_corpus, load_pool, parse_size
from brain_lab.bench.load import CachedVectors
from brain_lab.bench.recall import engine_sequential, in_process
from brain_lab.bench.stats import index_footprint, percentiles
from brain_lab.bench.workload import build_workload, parse_mix
from brain_search.config import Settings
from brain_search.graph.store import GraphStore
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client

MB = 1024 * 1024


def run_scale(
    settings: Settings, sizes: Sequence[str], n: int, out: Path, console: Console, log: Callable[[str], None]
) -> list[dict[str, Any]]:
    emb = cached_embedder(settings)
    pool = load_pool(settings, emb)
    items = build_workload(pool, n, parse_mix("auto=50,focus=15,z_value=10,tiered=10,nodes=15"), with_writes=False)
    recalls = items.recalls()
    texts = sorted({it.body["query"] for it in recalls})
    vectors = dict(zip(texts, emb.encode(texts), strict=True))
    rows: list[dict[str, Any]] = []
    for label in sizes:
        size = parse_size(label)
        s = corpus_settings(settings, size)
        client = make_client(s)
        rep = load_corpus(client, s, pool, size, log=log)
        if not rep.reused:
            log(f"{size:,} loaded in {rep.load_s:.0f} s ({rep.docs_per_s:,.0f}/s), merged in {rep.merge_s:.0f} s")
        retriever = Retriever(client, s, CachedVectors(vectors), GraphStore(client, s))
        # a full unmeasured pass first: a freshly loaded index is read from disk on first use
        in_process(retriever, recalls, "warm-up")
        st = in_process(retriever, recalls, label)
        payloads = [retriever.plan_payload(retriever.plan(it.tenant, RecallRequest(**it.body))) for it in recalls]
        eng = engine_sequential(client, s.memories_alias, payloads)
        fp = index_footprint(client, rep.index)
        summ = st.summary()
        row = {
            "size": size,
            "label": label,
            "load_s": rep.load_s,
            "merge_s": rep.merge_s,
            "recall_ms": summ["total_ms"],
            "search_ms": summ["search_ms"],
            "engine_msearch_ms": percentiles(eng),
            "n": len(recalls),
            "footprint": fp,
            "load_avg": os.getloadavg(),
        }
        rows.append(row)
        client.close()
        rec = summ["total_ms"]
        log(f"{label}: recall p50 {rec['p50']:.1f} p95 {rec['p95']:.1f} ms; disk {fp['disk_bytes'] / MB:.0f} MB")
    (out / "scale.json").write_text(json.dumps(rows, indent=2))
    _table(rows, console)
    plot_scale(rows, out / "scale.png")
    console.print(f"results in {out}")
    return rows


def _table(rows: Sequence[dict[str, Any]], console: Console) -> None:
    t = Table(title="cost against corpus size (ms; MB)")
    cols = (
        "memories",
        "recall p50",
        "recall p95",
        "search p50",
        "engine p50",
        "engine p95",
        "disk MB",
        "vector files MB",
        "node heap used MB",
        "knn graph mem KB",
        "load avg",
    )
    for c in cols:
        t.add_column(c)
    for r in rows:
        fp = r["footprint"]
        t.add_row(
            f"{r['size']:,}",
            f"{r['recall_ms']['p50']:.1f}",
            f"{r['recall_ms']['p95']:.1f}",
            f"{r['search_ms']['p50']:.1f}",
            f"{r['engine_msearch_ms']['p50']:.1f}",
            f"{r['engine_msearch_ms']['p95']:.1f}",
            f"{fp['disk_bytes'] / MB:.0f}",
            f"{fp['vector_files_bytes'] / MB:.0f}",
            f"{fp['node_heap_used_bytes'] / MB:.0f}",
            f"{fp['knn_graph_memory_kb']:.0f}",
            "/".join(f"{x:.1f}" for x in r["load_avg"]),
        )
    console.print(t)


def plot_scale(rows: Sequence[dict[str, Any]], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["size"] for r in rows]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax.plot(sizes, [r["recall_ms"]["p50"] for r in rows], "o-", label="recall p50")
    ax.plot(sizes, [r["recall_ms"]["p95"] for r in rows], "o--", label="recall p95")
    ax.plot(sizes, [r["engine_msearch_ms"]["p50"] for r in rows], "s-", label="engine _msearch p50")
    ax.plot(sizes, [r["engine_msearch_ms"]["p95"] for r in rows], "s--", label="engine _msearch p95")
    ax.set_xscale("log")
    ax.set_xlabel("memories")
    ax.set_ylabel("ms (sequential, one at a time)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax2.plot(sizes, [r["footprint"]["disk_bytes"] / MB for r in rows], "o-", label="disk")
    ax2.plot(sizes, [r["footprint"]["vector_files_bytes"] / MB for r in rows], "s-", label="HNSW + vector files")
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("memories")
    ax2.set_ylabel("MB")
    ax2.legend(fontsize=8)
    fig.suptitle("cost against corpus size")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
