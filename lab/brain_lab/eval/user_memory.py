"""The hand-written user-memory set (``lab/data/user_memory_set.json``, issue 55) run through the
service's own recall: one tenant holding what a chat product keeps of its user (preferences, facts
a later memory replaces, things the user said, numbers and dates, three conversations, themes
under knowledge-graph nodes) and 71 natural questions, 18 of them with no answer in the tenant.

``run_user_memory`` indexes the set under the settings' prefix as the service stores it (the
graph's nodes created, each memory's ``node_id`` / ``node_path``, timestamp, ``conversation_id``
and ``supersedes`` set through ``build_memory_doc``, the vectors from the encoder's passage side),
asks every question through ``Retriever.recall`` with the API's query encoder, once as a caller
does by default and once in strict mode (only memories that clear the relevance floor), and
returns per-question outcomes; ``summary`` turns them into the issue's figures and ``report``
into markdown with its goals marked MET or MISSED.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from opensearchpy import OpenSearch

from brain_lab.eval.indexing import bulk_memories
from brain_search.config import Settings
from brain_search.encoders.factory import make_query_embedder
from brain_search.encoders.queries import QueryCache
from brain_search.graph.store import GraphStore, in_subtree
from brain_search.ingest.prepare import iso_utc
from brain_search.models import MemoryResult, RecallRequest, RecallResponse
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.score.zaxis import EXACT_KINDS
from brain_search.store.indices import install_all
from brain_search.store.templates import delete_indices

SET_PATH = Path(__file__).resolve().parents[2] / "data" / "user_memory_set.json"
CATEGORIES = ("preference", "changing-fact", "quote", "number-date", "conversation", "broad-theme", "unanswerable")
LIMIT = 10
SPEC_Z_TOLERANCE = 0.1
"""a spec 5.2 phrasing behaves when its detected Z is within this of the table's and its answer is first"""
GOAL_RIGHT_FIRST = 0.90
GOAL_STRICT_EMPTY = 0.80
GOAL_STRICT_KEPT = 0.90


@dataclass(frozen=True)
class Outcome:
    category: str
    query: str
    answer: str | None
    """the memory that should come first; None: the tenant holds no answer"""
    right: frozenset[str]
    """every memory that is as right first (the answer, ``accept``, the ``theme`` node's memories)"""
    ids: tuple[str, ...]
    """the results' ids, best first (default mode)"""
    strict_ids: tuple[str, ...]
    """the results' ids in strict mode"""
    first_kind: str | None
    """how the first result matched (phrase | words | terms | meaning)"""
    nothing_matched: bool
    target_z: float
    spec_z: float | None
    theme_share: float | None
    """broad questions: the share of the first five results that are the theme node's memories"""

    @property
    def answerable(self) -> bool:
        return self.answer is not None

    @property
    def rank(self) -> int | None:
        """1-based rank of the first right memory, None when none is among the results"""
        return next((i for i, m in enumerate(self.ids, start=1) if m in self.right), None)

    @property
    def first(self) -> str | None:
        return self.ids[0] if self.ids else None

    @property
    def right_first(self) -> bool:
        return self.rank == 1

    @property
    def strict_kept(self) -> bool:
        return any(m in self.right for m in self.strict_ids)

    @property
    def spec_ok(self) -> bool:
        """a spec 5.2 phrasing: detected Z as the table says, and the answer first"""
        return self.spec_z is not None and abs(self.target_z - self.spec_z) <= SPEC_Z_TOLERANCE and self.right_first


def load_set(path: Path = SET_PATH) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _timestamp(value: str | None) -> str | None:
    return iso_utc(datetime.fromisoformat(value)) if value else None


def index_set(client: OpenSearch, settings: Settings, data: dict[str, Any]) -> dict[str, str]:
    """Replace what ``settings``' prefix holds with the set: the graph's nodes (``GraphStore.ensure``,
    as an ingest with ``create_nodes``), then the memories as the ingest pipeline writes them.
    Returns each memory's node label."""
    tenant: str = data["tenant"]
    mems: list[dict[str, Any]] = data["memories"]
    delete_indices(client, settings)
    install_all(client, settings)
    graph = GraphStore(client, settings)
    nodes = {label: graph.ensure(tenant, label) for label in sorted({m["node"] for m in mems})}
    rows = [
        {
            "memory_id": m["id"],
            "content": m["content"],
            "node_id": nodes[m["node"]].id,
            "node_path": nodes[m["node"]].label,
            "timestamp": _timestamp(m.get("timestamp")),
            "source": "chat",
            "conversation_id": m.get("conversation_id"),
            "supersedes": sorted(set(m["supersedes"])) if m.get("supersedes") else None,
        }
        for m in mems
    ]
    bulk_memories(client, settings, tenant, rows, "user-memory set")
    return {m["id"]: nodes[m["node"]].label for m in mems}


def strict_supported() -> bool:
    """``RecallRequest`` has ``strict`` (only memories that clear the relevance floor)."""
    return "strict" in RecallRequest.model_fields


def clears_floor(retriever: Retriever, r: MemoryResult) -> bool:
    """What strict mode keeps, where ``RecallRequest`` has no ``strict`` yet: an exact match, or
    a match strength at the floor or above (the tiers' rule)."""
    return r.match_kind in EXACT_KINDS or r.scores.match >= retriever.calibration.floor


def _strict_ids(retriever: Retriever, tenant: str, req: RecallRequest, resp: RecallResponse) -> tuple[str, ...]:
    if strict_supported():
        strict = retriever.recall(tenant, req.model_copy(update={"strict": True}))
        return tuple(r.id for r in strict.results)
    return tuple(r.id for r in resp.results if clears_floor(retriever, r))


def run_user_memory(client: OpenSearch, settings: Settings, path: Path = SET_PATH) -> list[Outcome]:
    """Index the set under ``settings``' prefix (replacing what was there) and ask every question."""
    data = load_set(path)
    tenant: str = data["tenant"]
    node_of = index_set(client, settings, data)
    encoder = QueryCache(make_query_embedder(settings), 256)
    retriever = Retriever(client, settings, encoder, graph=GraphStore(client, settings))
    out: list[Outcome] = []
    for q in data["questions"]:
        req = RecallRequest(query=q["query"], limit=LIMIT, nodes=q.get("nodes"))
        resp = retriever.recall(tenant, req)
        ids = tuple(r.id for r in resp.results)
        theme: str | None = q.get("theme")
        right = set(q.get("accept") or [])
        if q["answer"] is not None:
            right.add(q["answer"])
        if theme is not None:
            right |= {m for m, label in node_of.items() if in_subtree(label, theme)}
        share = None if theme is None else sum(m in right for m in ids[:5]) / 5
        out.append(
            Outcome(
                category=q["category"],
                query=q["query"],
                answer=q["answer"],
                right=frozenset(right),
                ids=ids,
                strict_ids=_strict_ids(retriever, tenant, req, resp),
                first_kind=str(resp.results[0].match_kind) if resp.results else None,
                nothing_matched=resp.query_analysis.nothing_matched,
                target_z=resp.query_analysis.target_z,
                spec_z=q.get("spec_z"),
                theme_share=share,
            )
        )
    return out


def _share(rows: Sequence[Outcome], hit: Any) -> float:
    return sum(1 for o in rows if hit(o)) / max(1, len(rows))


def summary(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    """Figures per category and for all answerable questions (right-first, R@5, strict: answer
    kept, ``nothing_matched``), and for the unanswerable ones (strict: nothing returned,
    ``nothing_matched``)."""
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    out: dict[str, dict[str, float]] = {}
    groups = [(c, [o for o in answerable if o.category == c]) for c in CATEGORIES if c != "unanswerable"]
    for name, rows in [*groups, ("answerable", answerable)]:
        out[name] = {
            "n": len(rows),
            "right_first": _share(rows, lambda o: o.right_first),
            "R@5": _share(rows, lambda o: o.rank is not None and o.rank <= 5),
            "strict_kept": _share(rows, lambda o: o.strict_kept),
            "nothing_matched": _share(rows, lambda o: o.nothing_matched),
        }
    out["unanswerable"] = {
        "n": len(unanswerable),
        "strict_empty": _share(unanswerable, lambda o: not o.strict_ids),
        "nothing_matched": _share(unanswerable, lambda o: o.nothing_matched),
        "strict_results": sum(len(o.strict_ids) for o in unanswerable) / max(1, len(unanswerable)),
    }
    broad = [o for o in outcomes if o.theme_share is not None]
    out["broad-theme"]["theme_share@5"] = sum(o.theme_share or 0.0 for o in broad) / max(1, len(broad))
    spec = [o for o in outcomes if o.spec_z is not None]
    out["spec phrasings"] = {"n": len(spec), "behave": _share(spec, lambda o: o.spec_ok)}
    return out


def goals(s: dict[str, dict[str, float]]) -> list[tuple[str, float, float, bool]]:
    """The issue's goals: (what, measured, goal, met)."""
    rows = [
        ("answerable questions right first", s["answerable"]["right_first"], GOAL_RIGHT_FIRST),
        ("strict: unanswerable questions return nothing", s["unanswerable"]["strict_empty"], GOAL_STRICT_EMPTY),
        ("strict: answerable questions keep their answer", s["answerable"]["strict_kept"], GOAL_STRICT_KEPT),
        ("spec 5.2 phrasings behave as its table says", s["spec phrasings"]["behave"], 1.0),
    ]
    return [(what, got, goal, got >= goal) for what, got, goal in rows]


def report(encoder: str, outcomes: Sequence[Outcome]) -> str:
    """The goals, a table per category, the spec phrasings, then every failing question."""
    s = summary(outcomes)
    mode = "RecallRequest(strict=True)" if strict_supported() else "results filtered to those clearing the floor"
    lines = [
        f"### {encoder}",
        "",
        f"Strict mode: {mode}.",
        "",
        "| goal | measured | target | |",
        "| --- | --- | --- | --- |",
    ]
    for what, got, goal, met in goals(s):
        lines.append(f"| {what} | {got:.3f} | ≥ {goal:.2f} | {'MET' if met else 'MISSED'} |")
    lines += [
        "",
        "| category | n | right first | R@5 | strict: kept | nothing_matched |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in [*(c for c in CATEGORIES if c != "unanswerable"), "answerable"]:
        g = s[name]
        lines.append(
            f"| {name} | {g['n']:.0f} | {g['right_first']:.3f} | {g['R@5']:.3f} | {g['strict_kept']:.3f} "
            f"| {g['nothing_matched']:.3f} |"
        )
    u = s["unanswerable"]
    lines += [
        "",
        f"Unanswerable ({u['n']:.0f}): strict returns nothing {u['strict_empty']:.3f} "
        f"(results left on average {u['strict_results']:.2f}), nothing_matched {u['nothing_matched']:.3f}.",
        f"Broad themes: share of the first five from the theme's node {s['broad-theme']['theme_share@5']:.3f}.",
        "",
        "| spec 5.2 phrasing | Z (table) | Z (detected) | first | behaves |",
        "| --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        if o.spec_z is not None:
            lines.append(
                f"| {o.query} | {o.spec_z:.1f} | {o.target_z:.2f} | {o.first} | {'yes' if o.spec_ok else 'no'} |"
            )
    lines += ["", "Failing questions (first result and how it matched):", ""]
    for o in outcomes:
        if o.answerable and not (o.right_first and o.strict_kept):
            where = f"rank {o.rank}" if o.rank else f"not in the top {LIMIT}"
            strict = "" if o.strict_kept else ", dropped by strict"
            first = f"{o.first} ({o.first_kind})"
            lines.append(f"- {o.category}: {o.query} → expected {o.answer}, first {first}: {where}{strict}")
        elif not o.answerable and o.strict_ids:
            lines.append(
                f"- unanswerable: {o.query} → strict returns {len(o.strict_ids)}, first {o.strict_ids[0]} "
                f"(nothing_matched {o.nothing_matched})"
            )
    return "\n".join(lines) + "\n"
