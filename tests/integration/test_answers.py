"""Answers a product can pass to its model as they are (issue 55), on the real stack: strict mode
and `min_relevance`, a calibrated relevance that reads low below the floor, and a chosen Z that
never ranks a non-match above a match."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.ingest_support import wait_task
from tests.integration.recall_corpus import index_corpus

pytestmark = pytest.mark.integration


def recall(api: Any, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    r = api.post("/v1/recall", json=body, headers=headers)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def store(api: Any, headers: dict[str, str], memories: list[dict[str, Any]]) -> None:
    """Write ``memories`` through the API and wait until they are searchable."""
    r = api.post("/v1/memories", json={"memories": memories, "refresh": True}, headers=headers)
    assert r.status_code == 202, r.text
    wait_task(api, headers, r.json()["task_id"])


def test_strict_returns_nothing_when_nothing_matched(api, alice) -> None:  # type: ignore[no-untyped-def]
    loose = recall(api, alice, query="What is my blood type?")
    assert loose["query_analysis"]["nothing_matched"] is True
    assert loose["results"], "without strict the list still fills (the closest memories)"
    assert all(not r["scores"]["clears_floor"] for r in loose["results"])
    # a miss never reads as a confident answer
    floor_reads = max(r["scores"]["relevance"] for r in loose["results"])
    assert floor_reads < 0.4
    strict = recall(api, alice, query="What is my blood type?", strict=True)
    assert strict["results"] == []
    assert strict["query_analysis"]["nothing_matched"] is True
    assert strict["query_analysis"]["withheld"] == len(loose["results"])
    assert strict["query_analysis"]["floor"] == loose["query_analysis"]["floor"] > 0


def test_strict_keeps_the_matches_and_only_them(api, alice) -> None:  # type: ignore[no-untyped-def]
    loose = recall(api, alice, query="How far did I run in the park?", limit=9)
    strict = recall(api, alice, query="How far did I run in the park?", limit=9, strict=True)
    assert strict["results"][0]["id"] == "run"
    assert [r["id"] for r in strict["results"]] == [r["id"] for r in loose["results"] if r["scores"]["clears_floor"]]
    assert len(strict["results"]) < len(loose["results"])
    assert strict["query_analysis"]["withheld"] == len(loose["results"]) - len(strict["results"])


def test_calibrated_relevance_follows_the_match(api, alice) -> None:  # type: ignore[no-untyped-def]
    out = recall(api, alice, query="How far did I run in the park?", limit=9)
    rows = [
        (r["scores"]["match"], r["scores"]["relevance"], r["match_kind"], r["scores"]["clears_floor"])
        for r in out["results"]
    ]
    for r in out["results"]:
        assert 0.0 <= r["scores"]["relevance"] <= 1.0
    for clears in (True, False):  # monotone in strength among what clears the floor, and among the rest
        meaning = sorted((m, rel) for m, rel, kind, c in rows if kind not in ("phrase", "words") and c == clears)
        assert [rel for _, rel in meaning] == sorted(rel for _, rel in meaning), rows
    top = out["results"][0]
    assert top["id"] == "run" and top["scores"]["relevance"] >= max(
        r["scores"]["relevance"] for r in out["results"][1:]
    )
    below = [r["scores"]["relevance"] for r in out["results"] if not r["scores"]["clears_floor"]]
    above = [r["scores"]["relevance"] for r in out["results"] if r["scores"]["clears_floor"]]
    assert max(below) <= min(above)  # what does not clear the floor never reads above what does


def test_min_relevance_keeps_what_reaches_it(api, alice) -> None:  # type: ignore[no-untyped-def]
    loose = recall(api, alice, query="How far did I run in the park?", limit=9)
    cut = loose["results"][0]["scores"]["relevance"]
    out = recall(api, alice, query="How far did I run in the park?", limit=9, min_relevance=cut)
    assert [r["id"] for r in out["results"]] == [r["id"] for r in loose["results"] if r["scores"]["relevance"] >= cut]
    assert out["results"][0]["id"] == "run"
    r = api.post("/v1/recall", json={"query": "x", "min_relevance": 1.5}, headers=alice)
    assert r.status_code == 422 and "min_relevance" in r.text


def test_a_broad_slider_keeps_the_match_first(api, make_tenant, client) -> None:  # type: ignore[no-untyped-def]
    """Issue 55, item 5: with `z_value: 1` the one real match dropped behind memories that do not
    match. The slider moves the emphasis among matches, never a non-match above a match."""
    headers = make_tenant("slider")
    corpus = [
        ("dentist", "Personal/Health", "My dentist appointment is on Tuesday at 3 pm with Dr. Okafor.", "2026-01-10"),
        ("kitchen", "Home", "We are repainting the kitchen a pale green next month.", "2026-01-02"),
        ("trip", "Travel", "Thinking about a long weekend in Porto in the spring.", "2026-01-03"),
        ("book", "Reading", "Finished a novel about a lighthouse keeper on a remote island.", "2026-01-04"),
        ("gym", "Personal/Health", "Signed up for a yoga class on Thursday evenings.", "2026-01-05"),
        ("budget", "Money", "Set aside 200 euros a month for the holiday fund.", "2026-01-06"),
    ]
    index_corpus(api.app.state.brain, client, "slider", corpus)
    for z in (0.0, 0.5, 1.0):
        out = recall(api, headers, query="When is my dentist appointment?", z_value=z, limit=6)
        shown = [r["scores"]["clears_floor"] for r in out["results"]]
        assert out["results"][0]["id"] == "dentist", (z, [(r["id"], r["scores"]["match"]) for r in out["results"]])
        assert shown == sorted(shown, reverse=True), (z, shown)  # every match above every non-match


def test_the_current_version_of_a_fact_comes_first(api, make_tenant) -> None:  # type: ignore[no-untyped-def]
    """Issue 55, item 3: after `home-lisbon` replaces `home-berlin`, "Where do I live?" ranked the
    old Berlin rent first and Lisbon second, in no tier. The current version answers what the old
    one answered: first, in a tier, and before what it replaced when that is shown too."""
    headers = make_tenant("mover")
    memories = [
        {"content": "I live in Berlin, in a small flat in Kreuzberg.", "memory_id": "home-berlin"},
        {"content": "My rent in Berlin is 950 euros a month, heating included.", "memory_id": "rent-berlin"},
        {"content": "My sister lives in Porto with her two cats.", "memory_id": "sister"},
        {"content": "I cycle to the office most mornings.", "memory_id": "commute"},
        {"content": "The dentist said my teeth look fine.", "memory_id": "dentist"},
        {
            "content": "We moved to Lisbon in March; the new flat in Alfama has a balcony.",
            "memory_id": "home-lisbon",
            "supersedes": ["home-berlin"],
        },
    ]
    store(api, headers, memories)

    out = recall(api, headers, query="Where do I live?", tiered=True)
    ids = [r["id"] for r in out["results"]]
    assert ids[0] == "home-lisbon", [(r["id"], r["scores"]) for r in out["results"]]
    assert "home-berlin" not in ids
    tiered = {r["id"] for tier in out["tiers"].values() for r in tier}
    assert "home-lisbon" in tiered
    both = recall(api, headers, query="Where do I live?", include_superseded=True)
    ids = [r["id"] for r in both["results"]]
    assert ids.index("home-lisbon") < ids.index("home-berlin"), ids


def test_conversations_are_held_to_the_floor(api, make_tenant) -> None:  # type: ignore[no-untyped-def]
    """Issue 55, item 4: "that conversation about the kitchen" also offered the job-offer
    conversation (a turn far below the floor); once the kitchen one was forgotten it still offered
    the job offer. A conversation is offered for a turn that matches, and for nothing else."""
    headers = make_tenant("talks")
    kitchen = [
        "The landlord agreed to replace the kitchen cabinets next month.",
        "I asked for a gas hob instead of the old electric kitchen stove.",
        "The kitchen tiles will be white with grey grout.",
    ]
    job = [
        "I got a job offer from Harbor Health as a data engineer.",
        "The offer is 15 percent more than what I earn now.",
        "I am not sure about the longer commute though.",
    ]
    memories = [
        {"content": t, "memory_id": f"kitchen-{i}", "conversation_id": "conv-kitchen", "source": "conversation"}
        for i, t in enumerate(kitchen)
    ] + [
        {"content": t, "memory_id": f"job-{i}", "conversation_id": "conv-job", "source": "conversation"}
        for i, t in enumerate(job)
    ]
    store(api, headers, memories)

    q = "What was that conversation about the kitchen?"
    out = recall(api, headers, query=q)
    assert [c["conversation_id"] for c in out["conversations"]] == ["conv-kitchen"], out["conversations"]
    r = api.post("/v1/forget", json={"conversation_id": "conv-kitchen"}, headers=headers)
    assert r.status_code in (200, 202), r.text
    if r.status_code == 202:
        from tests.integration.test_forget import _wait_forget

        _wait_forget(api, headers, r.json()["task_id"])
    out = recall(api, headers, query=q)
    assert out["conversations"] == [] and out["query_analysis"]["nothing_matched"], out


THEMED = [
    ("allergy", "Health", "I am allergic to penicillin, it gives me hives.", "2026-01-02"),
    ("bp", "Health", "At the checkup my blood pressure was 128 over 82.", "2026-01-03"),
    ("physio", "Health/Fitness", "The physio gave me three stretches for my left knee.", "2026-01-04"),
    ("spicy", "Food", "I love very spicy food, the hotter the better.", "2026-01-05"),
    ("risotto", "Food", "My go-to dinner is a mushroom risotto with lots of parmesan.", "2026-01-06"),
    ("coffee", "Food", "I drink two flat whites every morning.", "2026-01-07"),
    ("job", "Work", "I start the new job at Harbor Health on the first of April.", "2026-01-08"),
    ("flat", "Home", "The new flat has a balcony facing the river.", "2026-01-09"),
]


@pytest.mark.parametrize(
    ("query", "nodes", "theme", "members"),
    [
        ("Explore everything related to my health", None, ["Health"], {"allergy", "bp", "physio"}),
        ("Explore everything related to my health", ["Health"], ["Health"], {"allergy", "bp", "physio"}),
        ("Explore everything related to food", None, ["Food"], {"spicy", "risotto", "coffee"}),
    ],
)
def test_a_broad_question_returns_its_theme(api, make_tenant, client, query, nodes, theme, members) -> None:  # type: ignore[no-untyped-def]
    """Issue 55, item 2: "Explore everything related to my health" came back empty even with
    `nodes: ["Health"]`; "…related to food" returned one memory. A broad question scoped to nodes
    (given, or named by the query) returns the memories under them, all of them matches."""
    headers = make_tenant("themes")
    index_corpus(api.app.state.brain, client, "themes", THEMED)
    body: dict[str, Any] = {"query": query, "tiered": True, "strict": True}
    if nodes:
        body["nodes"] = nodes
    out = recall(api, headers, **body)
    qa = out["query_analysis"]
    assert qa["target_z"] >= 0.8 and qa["theme"] == theme, qa
    assert not qa["nothing_matched"]
    assert {r["id"] for r in out["results"]} == members, [(r["id"], r["node"]["label"]) for r in out["results"]]
    tiered = {r["id"] for tier in out["tiers"].values() for r in tier}
    assert tiered == members


PERSON = [
    ("book", "Users/lena", "The book club meets on Thursdays at the library.", "2026-01-02"),
    ("plumber", "Users/lena", "The plumber comes on Monday to fix the boiler.", "2026-01-03"),
    ("roadmap", "Users/lena", "The Q1 roadmap review moved to the second week of March.", "2026-01-04"),
    ("bike", "Users/lena", "I bought a second-hand road bike for the summer.", "2026-01-05"),
    ("allergy", "Users/lena/Health", "I am allergic to penicillin, it gives me hives.", "2026-01-06"),
    ("bp", "Users/lena/Health", "At the checkup my blood pressure was 128 over 82.", "2026-01-07"),
    ("omar-bp", "Users/omar/Health", "Omar's blood pressure was 141 over 90 at his checkup.", "2026-01-08"),
]


def test_a_node_given_as_scope_is_never_the_theme_by_itself(api, make_tenant, client) -> None:  # type: ignore[no-untyped-def]
    """Issue 67, item 8: `{"query": "Explore everything related to my health", "nodes": ["Users/lena"],
    "strict": true}` answered every memory under the node, each `clears_floor: true` at relevance 0:
    the node given as scope was taken for the question's theme. A node is the theme only when the
    question names it (here `Users/lena/Health`, within the scope); strict never returns a result
    at relevance 0."""
    headers = make_tenant("person")
    index_corpus(api.app.state.brain, client, "person", PERSON)
    q = "Explore everything related to my health"
    out = recall(api, headers, query=q, nodes=["Users/lena"], strict=True, tiered=True)
    got = {r["id"]: r["scores"] for r in out["results"]}
    assert out["query_analysis"]["theme"] == ["Users/lena/Health"], out["query_analysis"]
    assert set(got) == {"allergy", "bp"}, got  # the book club, the plumber, the roadmap: not health
    assert all(s["relevance"] > 0 and s["clears_floor"] for s in got.values()), got
    # without a node the question names, the scope is only a scope: each memory read by its own match
    for nodes in (["Users/lena/Health"], ["Users/omar"]):
        out = recall(api, headers, query="Explore everything related to my fitness", nodes=nodes, strict=True)
        assert out["query_analysis"]["theme"] == [], (nodes, out["query_analysis"])
        assert all(r["scores"]["relevance"] > 0 for r in out["results"]), (nodes, out["results"])
        assert "book" not in {r["id"] for r in out["results"]}
    # strict never returns a result at relevance 0, whatever the question
    for query in (q, "everything", "Explore everything", "What is going on?"):
        for nodes in (None, ["Users/lena"], ["Users"]):
            body: dict[str, Any] = {"query": query, "strict": True, "limit": 50}
            if nodes:
                body["nodes"] = nodes
            out = recall(api, headers, **body)
            assert all(r["scores"]["relevance"] > 0 for r in out["results"]), (query, nodes, out["results"])


def test_a_current_version_outside_the_candidates_is_fetched(api, client) -> None:  # type: ignore[no-untyped-def]
    """Item 3 where the search did not return the new version at all: three candidates a leg, and
    "Moved to Lisbon" shares no word and little meaning with "where do I live". It is fetched by
    its id (one more round trip) and takes the old version's place, first."""
    from brain_search.encoders.factory import make_query_embedder
    from brain_search.encoders.queries import QueryCache
    from brain_search.models import RecallRequest
    from brain_search.retrieval.pipeline import Retriever
    from brain_search.store.documents import build_memory_doc, memory_doc_id
    from tests.integration.recall_corpus import document_embedder

    state = api.app.state.brain
    s = state.settings.model_copy(update={"recall_candidates_min": 3, "recall_candidates_factor": 1})
    fillers = [
        "My sister lives in Porto with her two cats.",
        "Our neighbours live above a bakery.",
        "Grandma lived on a farm all her life.",
        "The flat we live in has thin walls.",
        "Living near the river is lovely in summer.",
        "Where I live the trams stop at midnight.",
    ]
    rows = [("home-berlin", "I live in Berlin, in a small flat in Kreuzberg.", None)]
    rows += [(f"f{i}", text, None) for i, text in enumerate(fillers)]
    rows.append(("home-lisbon", "Moved this month; the new place is five minutes from the metro.", ["home-berlin"]))
    vecs = document_embedder(s).encode([r[1] for r in rows])
    for (mid, text, supersedes), vec in zip(rows, vecs, strict=True):
        doc = build_memory_doc(
            tenant_id="far", memory_id=mid, content=text, embedding=vec,
            embedding_model=state.embedder.name, supersedes=supersedes,
        )  # fmt: skip
        client.index(index=s.memories_alias, id=memory_doc_id("far", mid), body=doc, routing="far")
    client.indices.refresh(index=s.memories_alias)
    retriever = Retriever(client, s, QueryCache(make_query_embedder(s), 2**20))
    req = RecallRequest(query="Where do I live?", limit=2)
    plain = retriever.search(retriever.plan("far", req)).candidates
    assert "home-lisbon" not in {c.source.get("memory_id") for c in plain.values()}  # the search misses it
    out = retriever.recall("far", req)
    assert out.results[0].id == "home-lisbon", [(r.id, r.scores.rank) for r in out.results]
    assert "home-berlin" not in [r.id for r in out.results]


def test_a_memory_about_someone_else_does_not_answer(api, make_tenant) -> None:  # type: ignore[no-untyped-def]
    """Issue 55 (the unanswerable share): "How much did I earn at Finlo?" cleared the floor on the
    Harbor offer and the first day at Harbor, "What's Priya's phone number?" on Priya the manager.
    A memory must be able to answer what the question asks: the names it gives, the figure it
    wants. Before the check, both strict recalls returned memories."""
    headers = make_tenant("answers-check")
    memories = [
        {"content": "I work as a backend engineer at Finlo, a payments startup in Berlin.", "memory_id": "finlo"},
        {"content": "The Harbor offer came in at 142,000 euros a year plus equity.", "memory_id": "offer"},
        {"content": "First day at Harbor Health as a staff engineer. New job, new laptop.", "memory_id": "harbor"},
        {"content": "My manager at Harbor is Priya Nair. We meet every other Thursday at 3pm.", "memory_id": "priya"},
        {"content": "I'm putting 500 euros a month aside towards a deposit on a flat.", "memory_id": "savings"},
    ]
    store(api, headers, memories)
    for query in ("How much did I earn at Finlo?", "What's Priya's phone number?"):
        out = recall(api, headers, query=query, strict=True)
        assert out["results"] == [], (query, [(r["id"], r["scores"]) for r in out["results"]])
        assert out["query_analysis"]["nothing_matched"] is True
        loose = recall(api, headers, query=query)
        assert loose["results"] and all(not r["scores"]["clears_floor"] for r in loose["results"])
    # what can answer still does
    out = recall(api, headers, query="How much did Harbor offer me?", strict=True)
    assert out["results"] and out["results"][0]["id"] == "offer", out["results"]
    out = recall(api, headers, query="Who is my manager at Harbor?", strict=True)
    assert out["results"] and out["results"][0]["id"] == "priya", out["results"]
