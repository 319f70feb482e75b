"""Tenant statistics: once a tenant has been counted, a recall's counts ride in its own
``_msearch`` and every lexical score comes from that fresh count (pure: a fake engine answers)."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest

from brain_search.config import Settings
from brain_search.models import RecallRequest
from brain_search.retrieval import pipeline
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.queries import COSINE_FIELD
from brain_search.retrieval.tenant_stats import WeightCache, idf, words_to_weigh

DOCS = 40


class Encoder:
    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        v = np.ones(384, dtype=np.float32)
        return v / np.linalg.norm(v)


def _hit(i: int, matched: list[str]) -> dict[str, Any]:
    source = {"memory_id": f"m{i}", "content": f"memory {i}", "node_id": "n", "node_path": "n"}
    return {
        "_id": f"m{i}",
        "_score": 1.0,
        "_source": source,
        "matched_queries": matched,
        "fields": {COSINE_FIELD: [0.1]},
    }


def _answer(hits: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "hits": {"total": {"value": len(hits), "relation": "eq"}, "hits": hits},
        "_shards": {"total": 1, "successful": 1},
    }


class Engine:
    """Answers every ``_msearch`` item in order: counts (size 0 with an aggregation: ``df`` per
    word), the lexical sub-search (``lexical`` hits), the kNN one (none) and the superseders (none)."""

    def __init__(self, df: dict[str, int], lexical: list[dict[str, Any]]) -> None:
        self.df, self.lexical = df, lexical
        self.payloads: list[list[dict[str, Any]]] = []

    def msearch(self, body: str, index: str) -> dict[str, Any]:
        lines = [orjson.loads(line) for line in body.strip().split("\n")]
        items = lines[1::2]
        self.payloads.append(items)
        out = []
        for item in items:
            if "aggs" in item:
                words = [_word_of(f) for f in item["aggs"]["df"]["filters"]["filters"].values()]
                buckets = {str(i): {"doc_count": self.df.get(w, 0)} for i, w in enumerate(words)}
                out.append(
                    {
                        **_answer([]),
                        "hits": {"total": {"value": DOCS}, "hits": []},
                        "aggregations": {"df": {"buckets": buckets}},
                    }
                )
            elif "script_fields" in item and "must" in item["query"]["bool"]:
                out.append(_answer(self.lexical[: item["size"]]))
            else:
                out.append(_answer([]))
        return {"responses": out}


def _word_of(clause: dict[str, Any]) -> str:
    """The word of a counts bucket's clause (``queries.term_match``)."""
    return str(next(iter(clause["match"].values()))["query"])


def test_counts_ride_in_the_search_once_the_tenant_was_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    # "zzqx" is rare (1 memory), "budget" common (30): memories holding zzqx must rank first
    # the engine's order under the guessed weights puts them 5th and 6th: beyond k = 3, within 2k
    lexical = [_hit(i, ["t1"]) for i in range(4)] + [_hit(100 + i, ["t0"]) for i in range(2)]
    lexical += [_hit(i, ["t1"]) for i in range(4, 30)]
    engine = Engine({"zzqx": 1, "budget": 30}, lexical)
    retriever = Retriever(engine, Settings(recall_candidates_min=3, recall_candidates_factor=1), Encoder())  # type: ignore[arg-type]
    req = RecallRequest(query="zzqx budget", limit=3)

    first = retriever.plan("t1", req)  # never counted: one search of counts first
    assert len(engine.payloads) == 1 and first.counted == ()
    words = words_to_weigh(first.terms, first.intent.phrases)
    assert words == ["zzqx", "budget"]
    assert first.term_idf == {"zzqx": idf(DOCS, 1), "budget": idf(DOCS, 30)}

    # a word the cache has not seen is guessed as rare as can be; with a margin the lexical
    # sub-search fetches LEXICAL_MARGIN × k and the k best by the fresh count stay
    monkeypatch.setattr(pipeline, "LEXICAL_MARGIN", 2)
    retriever.weight_cache = WeightCache()
    retriever.weight_cache.put("t1", DOCS, {"zzqx": 0.01})  # budget never counted, zzqx stale and wrong
    engine.payloads.clear()
    plan = retriever.plan("t1", req)
    assert engine.payloads == [] and plan.counted == ("zzqx", "budget")
    assert plan.bodies[0]["size"] == pipeline.LEXICAL_MARGIN * plan.k
    found, _, _, weights = retriever._search("t1", plan)
    assert len(engine.payloads) == 1 and "aggs" in engine.payloads[0][-1]  # one _msearch, the counts last
    assert weights == {"zzqx": idf(DOCS, 1), "budget": idf(DOCS, 30)}
    lexical_hits = [c for c in found.values() if c.lexical_hit]
    assert len(lexical_hits) == plan.k
    # both zzqx memories made the cut, scored by the fresh count
    assert {c.doc_id for c in lexical_hits if "t0" in c.matched} == {"m100", "m101"}
    assert all(c.bm25 == weights["zzqx" if "t0" in c.matched else "budget"] for c in lexical_hits)
    assert retriever.weight_cache.provisional("t1", words) == (weights, False)  # the cache took the count

    # every word known: k fetched, no margin; the kNN sub-search carries no scoring clause
    plan = retriever.plan("t1", req)
    assert plan.bodies[0]["size"] == plan.k and "should" not in plan.bodies[1]["query"]["bool"]
