"""BM25 over the tenant's own statistics: the clause, the counts, the cache (pure)."""

from __future__ import annotations

import math
import time
from concurrent.futures import Future
from typing import Any

import numpy as np
import orjson
import pytest

from brain_search.config import Settings
from brain_search.models import RecallRequest
from brain_search.retrieval.engine.queries import (
    BM25_B,
    BM25_B_SHORT,
    BM25_K1,
    COSINE_FIELD,
    PHRASE_BOOST,
    TF_FIELD,
    bm25_b,
    counts_body,
)
from brain_search.retrieval.engine.tenant_stats import (
    UNCOUNTED,
    UNCOUNTED_WEIGHT,
    StatsCache,
    TenantStats,
    count_terms,
    idf,
    stats_bytes,
    stats_from,
    stats_key,
    tenant_clause,
    words_to_weigh,
)
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.documents import VIEW_FIELD, view_of
from brain_search.store.scope import TenantScope
from tests.unit.fakes import NoOwnIndices

T1 = TenantScope("t1", "a")
STATS = TenantStats(docs=10, length_sum=200.0, length_docs=10, df={"zzqx": 1, "yyqw": 4, "a": 9})


def test_idf_is_bm25s_to_three_digits_and_never_negative() -> None:
    assert idf(10, 1) > idf(10, 5) > idf(10, 10) > 0
    assert idf(2, 1) == 0.693 and math.isclose(idf(2, 1), math.log(1 + 1.5 / 1.5), rel_tol=1e-3)
    assert idf(100_000, 7) == idf(100_001, 7) == 9.5  # a memory more moves no weight of a large tenant
    assert idf(100, 7) != idf(101, 7)  # of a small one it does
    assert TenantStats(3, 61.0, 3).avgdl == 20.3


def test_a_count_agrees_when_it_weighs_every_word_the_same() -> None:
    old = TenantStats(100_000, 2_000_000.0, 100_000, {"zzqx": 7, "budget": 3_000})
    one_more = TenantStats(100_001, 2_000_020.0, 100_001, {"zzqx": 7, "budget": 3_001})
    assert one_more.agrees(old, ["zzqx", "budget"])
    assert not TenantStats(100_001, 2_000_020.0, 100_001, {"zzqx": 8, "budget": 3_001}).agrees(old, ["zzqx"])
    assert not TenantStats(100_001, 2_600_000.0, 100_001, {"zzqx": 7}).agrees(old, ["zzqx"])  # the lengths moved
    assert not one_more.agrees(old, ["other"])  # a word neither counted
    assert not UNCOUNTED.agrees(old, [])


def test_each_term_is_bm25_with_the_tenants_idf_and_average_length() -> None:
    clause = tenant_clause(["zzqx", "yyqw"], ["yyqw a"], STATS)
    should = clause["bool"]["should"]
    terms = [c["script_score"] for c in should[:2]]
    assert [t["_name"] for t in terms] == ["t0", "t1"]
    assert [t["query"]["match"][TF_FIELD]["query"] for t in terms] == ["zzqx", "yyqw"]
    params = [t["script"]["params"] for t in terms]
    assert params == [
        {"idf": idf(10, 1), "avgdl": 20.0, "k1": BM25_K1, "b": BM25_B_SHORT},
        {"idf": idf(10, 4), "avgdl": 20.0, "k1": BM25_K1, "b": BM25_B_SHORT},
    ]
    # a phrase is a constant worth its topic words' idf ("a" is a stopword)
    phrase = should[2]["constant_score"]
    assert phrase["_name"] == "p0" and phrase["boost"] == PHRASE_BOOST * idf(10, 4)
    assert tenant_clause([], [], STATS) == {"match_none": {}}
    assert words_to_weigh(["zzqx"], ["zzqx and budget"]) == ["zzqx", "budget"]


def test_b_is_small_for_a_tenant_of_chat_lines_and_lucenes_for_long_texts() -> None:
    assert bm25_b(0.0) == bm25_b(18.0) == BM25_B_SHORT == 0.2
    assert bm25_b(60.0) == bm25_b(160.0) == BM25_B == 0.75
    middle = [bm25_b(x) for x in (31.0, 40.0, 50.0, 59.0)]
    assert BM25_B_SHORT < middle[0] < middle[1] < middle[2] < middle[3] < BM25_B
    assert math.isclose(bm25_b(45.0), (BM25_B_SHORT + BM25_B) / 2)


def test_a_users_recall_counts_what_the_user_reads_under_a_key_of_its_own() -> None:
    from brain_search.store.scope import UserScope

    def org(user: UserScope | None = None, tenant: str = "org") -> TenantScope:
        return TenantScope(tenant, "a", user or UserScope())

    lena = UserScope("lena")
    body = counts_body(org(lena), ["zzqx"])
    assert body["query"]["bool"]["filter"] == [{"term": {"tenant_id": "org"}}, {"term": {"user_id": "lena"}}]
    assert counts_body(org(UserScope()), ["zzqx"]) == counts_body(org(), ["zzqx"])  # the whole tenant
    keys = {
        stats_key(org()),
        stats_key(org(lena)),
        stats_key(org(UserScope("lena", include_shared=True))),
        stats_key(org(UserScope("lena", "bot"))),
        stats_key(org(UserScope(None, "bot"))),
        stats_key(org(tenant="org-lena")),
    }
    assert len(keys) == 6 and stats_key(org(UserScope())) == "org"
    cache = StatsCache()
    cache.put(stats_key(org()), TenantStats(100, 1000.0, 100, {"zzqx": 40}))
    assert cache.get(stats_key(org(lena)), ["zzqx"]) is None  # the organisation's count is not hers


def test_one_search_counts_the_tenant_every_word_and_the_lengths() -> None:
    body = counts_body(T1, ["zzqx", "budget"])
    assert body["size"] == 0 and body["track_total_hits"] is True
    assert body["query"]["bool"]["filter"] == [{"term": {"tenant_id": "t1"}}]
    assert sorted(body["aggs"]["df"]["filters"]["filters"]) == ["0", "1"]
    assert body["aggs"]["len"] == {"stats": {"field": "content.len"}}
    answer = {
        "hits": {"total": {"value": 10, "relation": "eq"}},
        "aggregations": {
            "df": {"buckets": {"0": {"doc_count": 1}, "1": {"doc_count": 10}}},
            "len": {"count": 8, "sum": 96.0},
        },
    }
    stats = stats_from(answer, ["zzqx", "budget"])
    assert stats == TenantStats(10, 96.0, 8, {"zzqx": 1, "budget": 10})
    assert stats.avgdl == 12.0 and stats.idf("zzqx") == idf(10, 1)
    assert TenantStats(docs=0).avgdl == 0.0  # no lengths: no length normalisation


class _Answers:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.bodies: list[str] = []

    def msearch(self, body: str, index: str) -> dict[str, Any]:
        self.bodies.append(body)
        return {"responses": [self.answer]}


def test_a_tenant_shard_that_does_not_answer_weighs_every_word_the_same() -> None:
    lost = _Answers({"error": {"type": "search_phase_execution_exception"}, "status": 503})
    got = count_terms(lost, T1, ["zzqx", "budget"])  # type: ignore[arg-type]
    assert got is UNCOUNTED and got.idf("zzqx") == UNCOUNTED_WEIGHT == got.idf("budget")
    assert len(lost.bodies) == 1 and lost.bodies[0].startswith('{"routing":"t1"}')


def test_the_cache_answers_only_when_every_word_was_counted() -> None:
    cache = StatsCache()
    assert cache.get("t1", ["zzqx"]) is None
    cache.put("t1", TenantStats(10, 100.0, 10, {"zzqx": 1}))
    cache.put("t1", TenantStats(10, 100.0, 10, {"budget": 3}))
    assert cache.get("t1", ["zzqx", "budget"]) == TenantStats(10, 100.0, 10, {"zzqx": 1, "budget": 3})
    cache.put("t1", TenantStats(11, 110.0, 11, {"budget": 4}))  # a memory more: the words stay
    assert cache.get("t1", ["zzqx"]) == TenantStats(11, 110.0, 11, {"zzqx": 1, "budget": 4})
    assert cache.get("t1", ["other"]) is None
    cache.put("t1", UNCOUNTED)  # a failed count is never kept
    assert cache.get("t1", ["budget"]) == TenantStats(11, 110.0, 11, {"zzqx": 1, "budget": 4})
    few = StatsCache(max_words=2)
    for w in ("a", "b", "c"):
        few.put("t1", TenantStats(10, 100.0, 10, {w: 1}))
    assert few.get("t1", ["b", "c"]) is not None and few.get("t1", ["a"]) is None  # the oldest word out
    few.put("t1", TenantStats(10, 100.0, 10, {"x": 1, "y": 1, "z": 1}))  # more words than room: the last count's
    assert few.get("t1", ["x", "y", "z"]) is not None and few.get("t1", ["c"]) is None
    small = StatsCache(max_bytes=stats_bytes("a", STATS) + 10)  # room for one tenant
    small.put("a", STATS)
    small.put("b", STATS)
    assert small.get("a", []) is None and small.get("b", []) == STATS


class Encoder:
    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        v = np.ones(384, dtype=np.float32)
        return v / np.linalg.norm(v)


class Engine:
    """Answers every ``_msearch`` item in order: counts (``df`` per word, ``docs`` memories), the
    lexical sub-search (one hit), the kNN one and the superseders (none)."""

    indices = NoOwnIndices()

    def __init__(self, df: dict[str, int], docs: int) -> None:
        self.df, self.docs = df, docs
        self.payloads: list[list[dict[str, Any]]] = []

    def msearch(self, body: str, index: str) -> dict[str, Any]:
        items = [orjson.loads(line) for line in body.strip().split("\n")][1::2]
        self.payloads.append(items)
        out: list[dict[str, Any]] = []
        for item in items:
            hits: list[dict[str, Any]] = []
            answer: dict[str, Any] = {"_shards": {"total": 1, "successful": 1}}
            if "aggs" in item:
                words = [
                    next(iter(f["match"].values()))["query"] for f in item["aggs"]["df"]["filters"]["filters"].values()
                ]
                buckets = {str(i): {"doc_count": self.df.get(w, 0)} for i, w in enumerate(words)}
                answer["aggregations"] = {
                    "df": {"buckets": buckets},
                    "len": {"count": self.docs, "sum": 5.0 * self.docs},
                }
            elif "must" in item["query"]["bool"]:
                source = {"memory_id": "m1", "content": "zzqx budget", "node_id": "n", "node_path": "n"}
                hits = [
                    {
                        "_id": "m1",
                        "_score": 2.5,
                        "matched_queries": ["t0"],
                        "fields": {COSINE_FIELD: [0.1], VIEW_FIELD: [view_of(source)]},
                    }
                ]
            answer["hits"] = {"total": {"value": self.docs if "aggs" in item else len(hits)}, "hits": hits}
            out.append(answer)
        return {"responses": out}


def test_a_search_built_with_a_stale_count_runs_again_with_the_fresh_one() -> None:
    engine = Engine({"zzqx": 1, "budget": 30}, docs=40)
    retriever = Retriever(engine, Settings(), Encoder())  # type: ignore[arg-type]
    req = RecallRequest(query="zzqx budget", limit=3)

    first = retriever.plan("t1", req)  # never counted: one search of counts first
    assert len(engine.payloads) == 1 and first.counted == ()
    assert first.term_idf == {"zzqx": idf(40, 1), "budget": idf(40, 30)}
    searched = retriever.search(first)
    found, used = searched.candidates, searched.plan
    assert len(engine.payloads) == 2 and used == first  # no count rode along: nothing to check
    assert found["m1"].bm25 == 2.5 and found["m1"].matched == {"t0"}  # the engine's BM25 as it is

    engine.payloads.clear()
    again = retriever.plan("t1", req)  # counted before: the count rides in the search
    assert engine.payloads == [] and again.counted == ("zzqx", "budget")
    used = retriever.search(again).plan
    assert len(engine.payloads) == 1 and "aggs" in engine.payloads[0][-1]
    assert used.stats == again.stats

    engine.df["zzqx"] = 2  # a memory changed: the count that rode along disagrees
    engine.payloads.clear()
    stale = retriever.plan("t1", req)
    used = retriever.search(stale).plan
    assert len(engine.payloads) == 2  # searched again, with the fresh count, which no count rides beside
    assert used.stats is not None and used.stats.df == {"zzqx": 2, "budget": 30} and used.counted == ()
    script = engine.payloads[1][0]["query"]["bool"]["must"][0]["bool"]["should"][0]["script_score"]["script"]
    assert script["params"]["idf"] == idf(40, 2)


def test_a_memory_more_that_moves_no_weight_costs_no_second_search() -> None:
    engine = Engine({"zzqx": 7, "budget": 3_000}, docs=100_000)
    retriever = Retriever(engine, Settings(), Encoder())  # type: ignore[arg-type]
    req = RecallRequest(query="zzqx budget", limit=3)
    retriever.search(retriever.plan("t1", req))  # counted first

    engine.docs, engine.df["budget"] = 100_001, 3_001  # a memory written since, with one of the words
    engine.payloads.clear()
    riding = retriever.plan("t1", req)
    used = retriever.search(riding).plan
    assert len(engine.payloads) == 1  # the same weights: the search built with the last count stands
    assert used.stats is not None and used.stats.docs == 100_001  # read on: the fresh count
    assert used.stats.df["budget"] == 3_001
    assert used.term_idf == riding.term_idf == {"zzqx": idf(100_001, 7), "budget": idf(100_001, 3_001)}


class SlowEncoder(Encoder):
    """Encodes in ``seconds`` (sleeping releases the GIL, as onnxruntime does) and notes when."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spans: list[tuple[float, float]] = []

    def encode_query(self, text: str, tenant_id: str | None = None) -> np.ndarray:
        t0 = time.monotonic()
        time.sleep(self.seconds)
        self.spans.append((t0, time.monotonic()))
        return super().encode_query(text, tenant_id)


class TimedEngine(Engine):
    def __init__(self, df: dict[str, int], docs: int) -> None:
        super().__init__(df, docs)
        self.sent: list[float] = []

    def msearch(self, body: str, index: str) -> dict[str, Any]:
        self.sent.append(time.monotonic())
        return super().msearch(body, index)


def test_a_question_with_new_words_is_counted_while_it_is_encoded() -> None:
    engine, encoder = TimedEngine({"zzqx": 1, "budget": 30}, docs=40), SlowEncoder(0.2)
    retriever = Retriever(engine, Settings(), encoder)  # type: ignore[arg-type]
    plan = retriever.plan("t1", RecallRequest(query="exactly where did I say zzqx budget", limit=3))
    (start, end), (sent,) = encoder.spans[0], engine.sent
    assert start - 0.05 < sent < end  # the count went out before the question was encoded
    assert plan.counted == () and plan.term_idf == {"zzqx": idf(40, 1), "budget": idf(40, 30)}
    assert retriever.stats_cache.get("t1", ["zzqx", "budget"]) is not None

    late_engine, late_encoder = TimedEngine({}, 40), SlowEncoder(0.2)
    off = Retriever(late_engine, Settings(count_ahead=False), late_encoder)  # type: ignore[arg-type]
    off.plan("t1", RecallRequest(query="zzqx budget", limit=3))
    assert late_engine.sent[0] >= late_encoder.spans[0][1]  # off: counted after the question was encoded
    retriever.close()
    off.close()


def test_counted_words_need_no_count_ahead_and_one_that_misses_a_word_is_not_used() -> None:
    engine = Engine({"zzqx": 1, "budget": 30, "other": 2}, docs=40)
    retriever = Retriever(engine, Settings(), Encoder())  # type: ignore[arg-type]
    assert retriever.count_ahead is not None
    retriever.stats_cache.put("t1", TenantStats(40, 200.0, 40, {"zzqx": 1, "budget": 30}))
    assert retriever.count_ahead.start(T1, "zzqx budget?") is None  # all counted: nothing sent
    assert engine.payloads == []

    ahead: Future[TenantStats] = Future()
    ahead.set_result(TenantStats(40, 200.0, 40, {"zzqx": 1}))  # counted ahead, without "other"
    assert retriever.count_ahead.landed(T1, ["zzqx", "other"], ahead) is None  # the plan counts "other" now
    assert retriever.count_ahead.landed(T1, ["zzqx"], ahead) == TenantStats(40, 200.0, 40, {"zzqx": 1})
    lost: Future[TenantStats] = Future()
    lost.set_result(UNCOUNTED)  # the tenant's shard did not answer the count ahead: as counting now says
    assert retriever.count_ahead.landed(T1, ["zzqx", "new"], lost) is UNCOUNTED
    assert engine.payloads == []
    retriever.close()


class DownEngine(Engine):
    def msearch(self, body: str, index: str) -> dict[str, Any]:
        raise ConnectionError("engine down")


def test_a_count_ahead_that_fails_fails_the_recall_as_counting_after_would() -> None:
    for settings in (Settings(), Settings(count_ahead=False)):
        retriever = Retriever(DownEngine({}, 0), settings, Encoder())  # type: ignore[arg-type]
        with pytest.raises(ConnectionError, match="engine down"):
            retriever.plan("t1", RecallRequest(query="zzqx budget", limit=3))
        retriever.close()
