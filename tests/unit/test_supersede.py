"""Superseded candidates from the recall's own superseders sub-search (pure: a fake client)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brain_search.retrieval.queries import superseders
from brain_search.retrieval.supersede import complete_answer, supersede


@dataclass
class Cand:
    source: dict[str, Any]


@dataclass
class FakeClient:
    hits: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0

    def search(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        return {"hits": {"hits": self.hits}}


def answer(hits: list[dict[str, Any]], total: int, relation: str = "eq") -> dict[str, Any]:
    return {"hits": {"hits": hits, "total": {"value": total, "relation": relation}}}


def hit(memory_id: str, supersedes: list[str]) -> dict[str, Any]:
    return {"fields": {"memory_id": [memory_id], "supersedes": sorted(supersedes)}}  # doc values


def cands() -> dict[str, Cand]:
    return {"d1": Cand({"memory_id": "m1"}), "d2": Cand({"memory_id": "m2"}), "d3": Cand({"memory_id": "m3"})}


def test_the_sub_search_counts_one_past_what_it_shows() -> None:
    body = superseders("t1", 5)
    assert body["size"] == 5 and body["track_total_hits"] == 6
    assert {"exists": {"field": "supersedes"}} in body["query"]["bool"]["filter"]


def test_a_complete_answer_needs_no_round_trip() -> None:
    client = FakeClient()
    found = cands()
    supersede(client, "a", "t1", found, drop=True, answer=answer([hit("m3", ["m1", "m9"])], 1))  # type: ignore[arg-type]
    assert sorted(found) == ["d2", "d3"] and client.calls == 0
    marked = cands()
    supersede(client, "a", "t1", marked, drop=False, answer=answer([hit("m3", ["m1"])], 1))  # type: ignore[arg-type]
    assert marked["d1"].source["superseded_by"] == "m3" and client.calls == 0


def test_a_cut_answer_falls_back_to_the_search_over_the_candidates() -> None:
    assert complete_answer(answer([hit("m3", ["m1"])], 2)) is None
    assert complete_answer(answer([hit("m3", ["m1"])], 1, "gte")) is None
    assert complete_answer(None) is None
    client = FakeClient(hits=[hit("m2", ["m1"])])
    found = cands()
    supersede(client, "a", "t1", found, drop=True, answer=answer([hit("m3", ["m1"])], 201, "gte"))  # type: ignore[arg-type]
    assert client.calls == 1 and sorted(found) == ["d2", "d3"]
    supersede(client, "a", "t1", cands(), drop=True, answer=None)  # type: ignore[arg-type]
    assert client.calls == 2


def test_a_memory_never_supersedes_itself() -> None:
    found = cands()
    supersede(FakeClient(), "a", "t1", found, drop=True, answer=answer([hit("m1", ["m1"])], 1))  # type: ignore[arg-type]
    assert sorted(found) == ["d1", "d2", "d3"]
