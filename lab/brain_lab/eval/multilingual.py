"""The hand-written multilingual set (``lab/data/multilingual_set.json``, issue 53) run through
the service's own recall: one tenant holding 42 memories in six languages (English, Spanish,
German, French, Chinese, Japanese), 42 questions (16 of them in another language than their
memory's) and 12 quoted phrases, two a language, that must land in the Exact tier.

``run_multilingual`` indexes the set under a prefix of its own (the memories' vectors from the
encoder's passage side), asks every question and phrase through ``Retriever.recall`` with the
API's query encoder, and returns per-question outcomes; ``summary`` turns them into the report's
figures (R@1, R@5, MRR@10 for same-language and cross-lingual questions, Exact placement and
P@1 for the phrases, per language).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from opensearchpy import OpenSearch

from brain_lab.eval.indexing import bulk_memories
from brain_search.config import Settings
from brain_search.encoders.factory import make_query_embedder
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.indices import install_all
from brain_search.store.templates import delete_indices

SET_PATH = Path(__file__).resolve().parents[2] / "data" / "multilingual_set.json"
TENANT = "multilingual"


@dataclass(frozen=True)
class Outcome:
    kind: str
    """question | quote"""
    lang: str
    answer_lang: str
    query: str
    answer: str
    rank: int | None
    """1-based rank of the answer among the results, None when absent"""
    exact: bool
    """the answer is in the Exact tier"""

    @property
    def cross(self) -> bool:
        return self.lang != self.answer_lang


def load_set(path: Path = SET_PATH) -> dict[str, list[dict[str, str]]]:
    data: dict[str, list[dict[str, str]]] = json.loads(path.read_text())
    return data


def run_multilingual(client: OpenSearch, settings: Settings, path: Path = SET_PATH) -> list[Outcome]:
    """Index the set under ``settings``' prefix (replacing what was there) and ask every question."""
    data = load_set(path)
    delete_indices(client, settings)
    install_all(client, settings)
    mems = data["memories"]
    rows = [{"memory_id": m["id"], "content": m["content"], "source": "note"} for m in mems]
    bulk_memories(client, settings, TENANT, rows, "multilingual set")
    retriever = Retriever(client, settings, QueryCache(make_query_embedder(settings), 256))
    lang_of = {m["id"]: m["lang"] for m in mems}
    out: list[Outcome] = []
    for kind, rows in (("question", data["questions"]), ("quote", data["quotes"])):
        for row in rows:
            resp = retriever.recall(TENANT, RecallRequest(query=row["query"], limit=10, tiered=True))
            ids = [r.id for r in resp.results]
            exact = resp.tiers is not None and any(r.id == row["answer"] for r in resp.tiers.exact_matches)
            rank = ids.index(row["answer"]) + 1 if row["answer"] in ids else None
            out.append(Outcome(kind, row["lang"], lang_of[row["answer"]], row["query"], row["answer"], rank, exact))
    return out


def _recall_at(rows: Sequence[Outcome], k: int) -> float:
    return sum(1 for o in rows if o.rank is not None and o.rank <= k) / max(1, len(rows))


def _mrr(rows: Sequence[Outcome]) -> float:
    return sum(1.0 / o.rank for o in rows if o.rank is not None and o.rank <= 10) / max(1, len(rows))


def summary(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    """Figures by group: same-language and cross-lingual questions, all questions, quoted phrases."""
    questions = [o for o in outcomes if o.kind == "question"]
    quotes = [o for o in outcomes if o.kind == "quote"]
    groups = {
        "same language": [o for o in questions if not o.cross],
        "cross-lingual": [o for o in questions if o.cross],
        "all questions": questions,
    }
    out = {
        name: {"n": len(rows), "R@1": _recall_at(rows, 1), "R@5": _recall_at(rows, 5), "MRR@10": _mrr(rows)}
        for name, rows in groups.items()
    }
    out["quoted phrases"] = {
        "n": len(quotes),
        "Exact": sum(o.exact for o in quotes) / max(1, len(quotes)),
        "P@1": _recall_at(quotes, 1),
    }
    return out


def report(encoder: str, outcomes: Sequence[Outcome]) -> str:
    """A markdown table of ``summary``, then every miss."""
    s = summary(outcomes)
    lines = [
        f"### {encoder}",
        "",
        "| group | n | R@1 | R@5 | MRR@10 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in ("same language", "cross-lingual", "all questions"):
        g = s[name]
        lines.append(f"| {name} | {g['n']:.0f} | {g['R@1']:.3f} | {g['R@5']:.3f} | {g['MRR@10']:.3f} |")
    q = s["quoted phrases"]
    lines += ["", f"Quoted phrases ({q['n']:.0f}, two a language): in Exact {q['Exact']:.3f}, P@1 {q['P@1']:.3f}", ""]
    misses = [
        o for o in outcomes if (o.kind == "question" and (o.rank or 99) > 5) or (o.kind == "quote" and not o.exact)
    ]
    for o in misses:
        where = f"rank {o.rank}" if o.rank else "not in the top 10"
        lines.append(f"- miss ({o.kind}, {o.lang} → {o.answer_lang}): {o.query} → {o.answer}: {where}, Exact {o.exact}")
    return "\n".join(lines) + "\n"
