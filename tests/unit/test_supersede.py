"""Superseded candidates from the recall's own superseders sub-search (pure: a fake client)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brain_search.retrieval.engine.candidates import Candidate
from brain_search.retrieval.engine.queries import superseders
from brain_search.retrieval.engine.supersede import complete_answer, newer_versions, without_superseded
from brain_search.store.scope import TenantScope


def supersede(
    client: Any, alias: str, tenant: str, found: dict[str, Candidate], drop: bool, answer: Any
) -> dict[str, Candidate]:
    ids = [c.source["memory_id"] for c in found.values()]
    return without_superseded(found, newer_versions(client, TenantScope(tenant, alias), ids, answer), drop)


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


def cands() -> dict[str, Candidate]:
    return {f"d{i}": Candidate(f"d{i}", {"memory_id": f"m{i}"}) for i in (1, 2, 3)}


def test_the_sub_search_counts_one_past_what_it_shows() -> None:
    body = superseders(TenantScope("t1", "a"), 5)
    assert body["size"] == 5 and body["track_total_hits"] == 6
    assert {"exists": {"field": "supersedes"}} in body["query"]["bool"]["filter"]


def test_a_complete_answer_needs_no_round_trip() -> None:
    client = FakeClient()
    given = cands()
    found = supersede(client, "a", "t1", given, drop=True, answer=answer([hit("m3", ["m1", "m9"])], 1))
    assert sorted(found) == ["d2", "d3"] and client.calls == 0
    assert sorted(given) == ["d1", "d2", "d3"]  # the given candidates are left as they are
    before = cands()
    marked = supersede(client, "a", "t1", before, drop=False, answer=answer([hit("m3", ["m1"])], 1))
    assert marked["d1"].source["superseded_by"] == "m3" and client.calls == 0
    assert "superseded_by" not in before["d1"].source


def test_a_cut_answer_falls_back_to_the_search_over_the_candidates() -> None:
    assert complete_answer(answer([hit("m3", ["m1"])], 2)) is None
    assert complete_answer(answer([hit("m3", ["m1"])], 1, "gte")) is None
    assert complete_answer(None) is None
    client = FakeClient(hits=[hit("m2", ["m1"])])
    found = supersede(client, "a", "t1", cands(), drop=True, answer=answer([hit("m3", ["m1"])], 201, "gte"))
    assert client.calls == 1 and sorted(found) == ["d2", "d3"]
    supersede(client, "a", "t1", cands(), drop=True, answer=None)
    assert client.calls == 2


def test_a_memory_never_supersedes_itself() -> None:
    found = supersede(FakeClient(), "a", "t1", cands(), drop=True, answer=answer([hit("m1", ["m1"])], 1))
    assert sorted(found) == ["d1", "d2", "d3"]
