"""The RealMem loader on tiny hand-made persona files, and the pool bound through the harness
(no engine: fake clients and systems)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from brain_lab.eval.brain_systems import Z_AWARE, Z_AWARE_NO_TIME, Z_NAIVE, BrainSystem
from brain_lab.eval.datasets import Dataset, EvalQuery
from brain_lab.eval.realmem import is_query, load_realmem, memory_used, realmem_tenants, tenant_of
from brain_lab.eval.report import EvalReport, headline, losses, write_report
from brain_lab.eval.retrieval_eval import METRICS_OF, evaluate_systems

from brain_search.errors import SetupError

DAY = datetime(2025, 12, 19, tzinfo=UTC)


def _turn(speaker: str, content: str, query: Any = False, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "is_query": query, "content": content, "query_id": extra.pop("query_id", None), **extra}


def _memory(uuid: str, content: str, source_turn: int, snapshot: str) -> dict[str, Any]:
    return {
        "index": 0,
        "type": "Dynamic",
        "content": content,
        "session_uuid": uuid,
        "source_turn": source_turn,
        "source_content_snapshot": snapshot,
        "source_role_snapshot": "User",
    }


def _ann() -> dict[str, Any]:
    """Three sessions; the second dated a day before the first (file order is the time order)."""
    s0 = {
        "session_identifier": "Bakery_1:S1_01",
        "session_uuid": "u0",
        "current_time": "2025-12-19 (Friday)",
        "dialogue_turns": [_turn("User", "I run a bakery in Lagos."), _turn("Assistant", "Noted, a bakery.")],
        # source_turn one past the turn (as most of the real data): the snapshot decides
        "extracted_memory": [
            _memory("u0", "User runs a bakery in Lagos", 1, "I run a bakery in Lagos."),
            _memory("u0", "Assistant noted the bakery", 2, "Noted, a bakery. It sounds lovely."),  # edited turn
        ],
    }
    s1 = {
        "session_identifier": "Enhanced:S10001",
        "session_uuid": "u1",
        "current_time": "2025-12-18 (Thursday)",
        "dialogue_turns": [
            _turn("User", "My oven broke yesterday.", "False"),
            _turn("Assistant", "Sorry to hear that."),
            _turn("User", "   "),
        ],
        "extracted_memory": [
            _memory("u1", "The oven broke", 0, "My oven broke yesterday."),
            _memory("u1", "Something without a turn", -1, ""),
        ],
    }
    used = [
        {"session_uuid": "u0", "content": "User runs a bakery in Lagos"},
        {"session_uuid": "u1", "content": "The oven broke"},
        {"session_uuid": "u2", "content": "Asked about the business"},  # its own session: dropped
        {"session_uuid": "nope", "content": "x"},
    ]
    no_turn = [{"session_uuid": "u1", "content": "Something without a turn"}]
    edited = [{"session_uuid": "u0", "content": "Assistant noted the bakery"}]
    turns = [
        _turn("User", "What did I tell you about my business?", True, query_id="Q-0001", topic="Bakery"),
        _turn("Assistant", "A bakery in Lagos, and the oven broke.", memory_used=str(used)),
        _turn("User", "And what has no turn?", "True", query_id="Q-0002", category_name="Temporal-reasoning"),
        _turn("Assistant", "Nothing.", memory_used=no_turn),
        _turn("User", "What did you say about it?", True, query_id="Q-0003", category_name="Implicit Preference"),
        _turn("Assistant", "That it is a bakery.", memory_used=edited),
    ]
    turns[0]["category_name"] = "Dynamic Incremental"
    turns[1]["memory_session_uuids"] = ["u0", "u1"]
    s2 = {
        "session_identifier": "Bakery_1:S2_01",
        "session_uuid": "u2",
        "current_time": "2025-12-19 (Friday)",
        "dialogue_turns": turns,
        "extracted_memory": [_memory("u2", "Asked about the business", 0, "What did I tell you about my business?")],
    }
    return {"_metadata": {"person_name": "Ann_O_Neil", "total_sessions": 3}, "dialogues": [s0, s1, s2]}


def _write(tmp: Path, persona: dict[str, Any], name: str) -> None:
    root = tmp / "realmem"
    root.mkdir(exist_ok=True)
    (root / f"{name}_dialogues_256k.json").write_text(json.dumps(persona))


def _one_query_persona(name: str) -> dict[str, Any]:
    s0 = {
        "session_identifier": "T:S1_01",
        "session_uuid": f"{name}-a",
        "current_time": "2026-01-01 (Thursday)",
        "dialogue_turns": [_turn("User", f"{name} likes tea.")],
        "extracted_memory": [_memory(f"{name}-a", "likes tea", 0, f"{name} likes tea.")],
    }
    s1 = {
        "session_identifier": "T:S1_02",
        "session_uuid": f"{name}-b",
        "current_time": "2026-01-02 (Friday)",
        "dialogue_turns": [
            _turn("User", "What do I drink?", True, query_id="Q-0001", category_name="Implicit Preference"),
            _turn("Assistant", "Tea.", memory_used=[{"session_uuid": f"{name}-a", "content": "likes tea"}]),
        ],
        "extracted_memory": [],
    }
    return {"_metadata": {"person_name": name}, "dialogues": [s0, s1]}


def test_turns_become_memories_in_file_time_order(tmp_path: Path) -> None:
    _write(tmp_path, _ann(), "Ann_O_Neil")
    ds = load_realmem(tmp_path)
    assert list(ds.memories) == ["realmem-ann-o-neil"]
    mems = {m.memory_id: m for m in ds.memories["realmem-ann-o-neil"]}
    assert list(mems) == ["u0:0", "u0:1", "u1:0", "u1:1", *(f"u2:{i}" for i in range(6))]  # u1:2 is empty
    m = mems["u1:0"]
    assert m.content == "My oven broke yesterday."
    assert m.node_id == "realmem-ann-o-neil/Enhanced:S10001"
    assert m.conversation_id == "u1" and m.source == "conversation"
    # the day so far (never earlier than a session before) + the session's index in minutes
    assert [mems[i].timestamp for i in ("u0:0", "u1:0", "u2:0")] == [DAY + timedelta(minutes=n) for n in range(3)]
    assert ds.counts["sessions dated before an earlier session (kept in file order)"] == 1
    assert ds.counts["empty turns (not memories)"] == 1
    assert ds.reference_times == {"realmem-ann-o-neil": DAY + timedelta(minutes=2)}


def test_evidence_resolves_by_the_snapshot_and_the_pool_ends_before_the_session(tmp_path: Path) -> None:
    _write(tmp_path, _ann(), "Ann_O_Neil")
    ds = load_realmem(tmp_path)
    q1, q3 = ds.queries
    assert q1.query_id == "realmem-ann-o-neil/Q-0001" and q1.category == "Dynamic Incremental"
    assert q1.text == "What did I tell you about my business?"
    assert q1.relevant == {"u0:0": 1, "u1:0": 1}
    session = DAY + timedelta(minutes=2)
    assert q1.reference_time == session and q1.until == session - timedelta(seconds=1)
    assert [m.memory_id for m in ds.pool(q1)] == ["u0:0", "u0:1", "u1:0", "u1:1"]
    assert q3.relevant == {"u0:1": 1}  # the turn was edited after the extraction: the one turn inside the snapshot
    c = ds.counts
    assert c["evidence items"] == 6
    assert c["evidence in the query's own or a later session (dropped)"] == 1
    assert c["evidence: session unknown (skipped)"] == 1
    assert c["evidence: no source turn (skipped)"] == 1
    assert c["evidence turn found: exact"] == 3 and c["evidence turn found: edited"] == 1
    assert c["evidence turn found, source_turn is the turn after it"] == 2  # u0:0 (1), u0:1 (2)
    assert c["evidence turn found, source_turn names it"] == 2  # u1:0, u2:0
    assert c["queries without usable evidence (skipped)"] == 1  # Q-0002 ("True" as a string)


def test_flags_and_evidence_as_strings() -> None:
    assert is_query({"is_query": True}) and is_query({"is_query": "True"}) and is_query({"is_query": " true "})
    assert not is_query({"is_query": "False"}) and not is_query({}) and not is_query({"is_query": None})
    item = {"session_uuid": "a", "content": "x"}
    assert memory_used({"memory_used": str([item])}) == [item]
    assert memory_used({"memory_used": json.dumps([item])}) == [item]
    assert memory_used({"memory_used": [item, "junk"]}) == [item]
    assert memory_used({"memory_used": "not a list ["}) is None
    assert memory_used({}) is None
    assert tenant_of("Kim_Ji_young") == "realmem-kim-ji-young"
    assert tenant_of("Liam_O'Connor") == "realmem-liam-o-connor"


def test_split_by_persona_file(tmp_path: Path) -> None:
    names = ["Ada", "Ben", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jo"]
    for name in reversed(names):
        _write(tmp_path, _one_query_persona(name), name)
    dev, test = load_realmem(tmp_path, "dev"), load_realmem(tmp_path, "test")
    assert list(dev.memories) == [tenant_of(n) for n in names[:5]]
    assert list(test.memories) == [tenant_of(n) for n in names[5:]]
    assert realmem_tenants(tmp_path, range(5, 10)) == list(test.memories)
    assert {q.tenant_id for q in dev.queries} == set(dev.memories) and len(dev.queries) == 5
    assert dev.split == "dev" and load_realmem(tmp_path, personas=[9]).split == "custom"
    assert len(load_realmem(tmp_path).memories) == 10


def test_missing_data_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(SetupError):
        load_realmem(tmp_path)


# --------------------------------------------------------------------------------------------
# the bound through the harness


def test_engine_candidates_filter_and_cache_by_the_bound() -> None:
    from brain_lab.eval.baselines import EngineCandidates, baseline_systems

    from brain_search.config import load_settings

    class _Client:
        def __init__(self) -> None:
            self.bodies: list[list[dict[str, Any]]] = []

        def msearch(self, body: list[dict[str, Any]], index: str) -> dict[str, Any]:
            self.bodies.append(body)
            hits = [{"_source": {"memory_id": "a"}, "_score": 1.0}]
            return {"responses": [{"hits": {"hits": hits}}] * 3}

    class _Emb:
        name, dimension = "fake", 2

        def encode(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 2), dtype=np.float32)

    client = _Client()
    cand = EngineCandidates(client, load_settings(index_prefix="x"), _Emb())  # type: ignore[arg-type]
    bm25 = baseline_systems(cand, "content")[0]
    until = DAY - timedelta(seconds=1)
    assert bm25.search("t", "q", 10, until=until) == ["a"]
    assert bm25.search("t", "q", 10, until=until, reference_time=DAY) == ["a"]  # cached: same bound
    bm25.search("t", "q", 10)  # no bound: another request
    assert len(client.bodies) == 2
    bounded, free = client.bodies
    rng = {"range": {"timestamp": {"lte": until.isoformat()}}}
    assert rng in bounded[1]["query"]["bool"]["filter"] and rng not in free[1]["query"]["bool"]["filter"]
    assert rng in bounded[-1]["query"]["knn"]["embedding"]["filter"]["bool"]["filter"]


def test_brain_systems_send_the_bound_and_the_query_time() -> None:
    class _Retriever:
        ranking = None

        def __init__(self) -> None:
            self.requests: list[Any] = []

        def recall(self, tenant: str, req: Any, ranking: Any = None) -> Any:
            self.requests.append(req)
            analysis = SimpleNamespace(detected_intent=SimpleNamespace(value="balanced"))
            return SimpleNamespace(query_analysis=analysis, results=[SimpleNamespace(id="m1")])

    r = _Retriever()
    last = DAY + timedelta(days=30)
    aware = BrainSystem(r, Z_AWARE, reference_times={"t": last})  # type: ignore[arg-type]
    off = BrainSystem(r, Z_AWARE_NO_TIME, reference_times={"t": last}, time_words=False)  # type: ignore[arg-type]
    assert aware.search("t", "what did I say last week", 10, until=DAY - timedelta(seconds=1), reference_time=DAY)
    aware.search("t", "what did I say last week", 10)  # no time of its own: the tenant's
    off.search("t", "q", 10, reference_time=DAY)
    # an undated tenant: no time words
    BrainSystem(r, Z_NAIVE).search("u", "q", 10)  # type: ignore[arg-type]
    first, second, third, fourth = r.requests
    assert first.until == DAY - timedelta(seconds=1) and first.reference_time == DAY and first.time_words
    assert second.until is None and second.reference_time == last and second.time_words
    assert third.reference_time == DAY and not third.time_words
    assert fourth.reference_time is None and not fourth.time_words


class _Recorder:
    def __init__(self, name: str, answers: dict[str, list[str]]) -> None:
        self.name = name
        self.answers = answers
        self.calls: list[tuple[str, datetime | None, datetime | None]] = []

    def search(
        self,
        tenant_id: str,
        query: str,
        limit: int,
        *,
        until: datetime | None = None,
        reference_time: datetime | None = None,
    ) -> list[str]:
        self.calls.append((query, until, reference_time))
        return self.answers[query][:limit]


def _realmem_result() -> tuple[Dataset, list[_Recorder]]:
    until = DAY - timedelta(seconds=1)
    qs = [
        EvalQuery("t/Q-1", "t", "q1", {"a": 1}, "Dynamic Incremental", until, DAY),
        EvalQuery("t/Q-2", "t", "q2", {"b": 1}, "Implicit Preference", until, DAY),
        EvalQuery("t/Q-3", "t", "q3", {"c": 1}, "Implicit Preference", until, DAY),
    ]
    ds = Dataset("realmem", "test", {"t": []}, qs)
    good = {"q1": ["a"], "q2": ["b"], "q3": ["c"]}
    half = {"q1": ["a"], "q2": ["x", "b"], "q3": ["x", "c"]}
    return ds, [
        _Recorder("BM25 (content)", good),
        _Recorder(Z_NAIVE, half),
        _Recorder(Z_AWARE, half),
        _Recorder(Z_AWARE_NO_TIME, half),
    ]


def test_the_report_gives_realmem_its_columns_categories_and_intervals(tmp_path: Path) -> None:
    ds, systems = _realmem_result()
    res = evaluate_systems(ds, systems, METRICS_OF["realmem"], 10)
    assert systems[0].calls[0] == ("q1", DAY - timedelta(seconds=1), DAY)
    assert res.select() == ds.queries and res.main_label == "all questions"
    report = EvalReport(command="brain-search eval", meta={}, retrieval=[res])
    header, rows = headline(report, "test")
    assert header == ["system", "realmem R@10", "realmem nDCG@10", "realmem MRR@10"]
    assert rows[0] == ["BM25 (content)", "**1.000**", "**1.000**", "**1.000**"]
    lost = losses(report)
    assert any(x.startswith("realmem test, all questions, MRR@10: Z-aware 0.667 < BM25 (content)") for x in lost)
    assert any("realmem test, category Implicit Preference, MRR@10" in x and "paired-bootstrap" in x for x in lost)
    md = write_report(report, tmp_path).read_text()
    assert "nDCG@10 per question category (test):" in md and "adversarial" not in md
    assert "## Time in words (RealMem, each query asked at its session's time" in md
    assert "| test | Implicit Preference | 2 | 1.000 | 1.000 | [+0.000, +0.000] |" in md
    assert "The two recalls give the same R@10 on every realmem question." in md
    assert (tmp_path / "categories_realmem_test.png").is_file()


def test_the_runner_splits_realmem_by_persona(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from brain_lab.eval import runner as runner_mod
    from brain_lab.eval.indexing import IndexedDataset

    from brain_search.config import load_settings

    names = ["Ada", "Ben", "Cy", "Dee", "Eve", "Fay", "Gus", "Hal", "Ivy", "Jo"]
    for name in names:
        _write(tmp_path, _one_query_persona(name), name)
    settings = load_settings(data_dir=tmp_path, cache_dir=tmp_path / "cache", index_prefix="x")

    def fake_index(client: Any, s: Any, ds: Dataset, embedder: Any, **kw: Any) -> IndexedDataset:
        return IndexedDataset(s, "x-realmem", ds.n_memories, reused=True)

    monkeypatch.setattr(runner_mod, "index_dataset", fake_index)
    options = runner_mod.EvalOptions(datasets=("realmem",))
    runner = runner_mod.EvalRunner(None, settings, options)  # type: ignore[arg-type]
    dev, test = runner.split_of("realmem", "dev"), runner.split_of("realmem", "test")
    assert list(dev.memories) == [tenant_of(n) for n in names[:5]] and len(dev.queries) == 5
    assert list(test.memories) == [tenant_of(n) for n in names[5:]]
    assert all(q.until is not None for q in test.queries) and set(test.reference_times) == set(test.memories)
    meta = runner._meta()
    assert "RealMem personas Ada, Ben, Cy, Dee, Eve;" in meta["splits"] and meta["splits"].endswith("Ivy, Jo")
    quick = runner_mod.EvalRunner(None, settings, runner_mod.EvalOptions(datasets=("realmem",), quick=True))  # type: ignore[arg-type]
    assert list(quick.load("realmem").memories) == [tenant_of("Ada"), tenant_of("Fay")]
    assert runner_mod.EvalOptions().datasets == ("locomo", "scifact", "realmem")
