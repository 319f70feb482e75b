"""Session-level recall (issue 42 item 5): sessions of the evidence, of the flat results and of
the conversations list, and the two measures."""

from __future__ import annotations

from brain_lab.eval.datasets import Dataset, EvalQuery, Memory
from brain_lab.eval.sessions import (
    distinct,
    hit_at,
    recall_at,
    relevant_sessions,
    session_index,
    sessions_of_conversations,
    sessions_of_results,
)

from brain_search.models import (
    ConversationContext,
    MemoryResult,
    NodeRef,
    QueryAnalysis,
    RecallResponse,
    ResultMetadata,
    Scores,
    Timings,
)


def _ds() -> Dataset:
    mems = [
        Memory("D1:1", "a", node_id="c/session_1", conversation_id="c"),
        Memory("D1:2", "b", node_id="c/session_1", conversation_id="c"),
        Memory("D2:1", "c", node_id="c/session_2", conversation_id="c"),
        Memory("note", "d"),  # no conversation
    ]
    return Dataset("locomo", "test", {"c": mems}, [])


def _resp(ids: list[str], convs: list[tuple[str, str]] | None) -> RecallResponse:
    scores = Scores(lexical=0, semantic=0, z_position=0.5, relevance=0)
    results = [
        MemoryResult(id=i, content="", node=NodeRef(id=None, label=None), scores=scores, metadata=ResultMetadata())
        for i in ids
    ]
    qa = QueryAnalysis(detected_intent="balanced", target_z=0.5, z_tolerance=0.2, confidence=1)
    cs = None
    if convs is not None:
        cs = [
            ConversationContext(conversation_id=c, node=NodeRef(id=n, label=n), score=1, hits=[], best_hit="x")
            for c, n in convs
        ]
    return RecallResponse(results=results, query_analysis=qa, timings=Timings(), conversations=cs)


def test_sessions_of_evidence_results_and_conversations() -> None:
    ds = _ds()
    index = session_index(ds)
    assert ("c", "note") not in index
    q = EvalQuery("q", "c", "?", {"D1:2": 1, "D2:1": 1, "note": 1})
    assert relevant_sessions(q, index) == {("c", "c/session_1"), ("c", "c/session_2")}
    flat = sessions_of_results(_resp(["D2:1", "note", "D2:1", "D1:1"], None), "c", index)
    assert flat == [("c", "c/session_2"), ("c", "c/session_1")]
    assert sessions_of_conversations(_resp([], [("c", "c/session_1")])) == [("c", "c/session_1")]
    assert sessions_of_conversations(_resp([], None)) == []
    assert distinct([None, ("a", None), ("a", None)]) == [("a", None)]


def test_hit_and_recall_at_k() -> None:
    rel = {("c", "s1"), ("c", "s2")}
    ranked = [("c", "s3"), ("c", "s1"), ("c", "s2")]
    assert hit_at(ranked, rel, 1) == 0.0 and hit_at(ranked, rel, 2) == 1.0
    assert recall_at(ranked, rel, 2) == 0.5 and recall_at(ranked, rel, 3) == 1.0
    assert recall_at(ranked, set(), 3) == 0.0
