"""A memories index made before the tenant's own BM25 (no ``brain_tf`` similarity, no
``content.tf`` / ``content.len``) gets them at install, and the memories it already held are
scored by the tenant's BM25 once the update-by-query that fills them ends."""

from __future__ import annotations

import copy
import time

import pytest
from brain_lab.eval.fit import candidates_of

from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.templates import (
    delete_indices,
    has_tenant_bm25_fields,
    install_memories_index,
    memories_template,
)
from tests.seed import Mem, seed_memories

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_an_index_from_before_tenant_bm25_is_migrated_in_place(client, stack_settings, embedder) -> None:
    s = stack_settings.model_copy(update={"index_prefix": f"{stack_settings.index_prefix}-mig"})
    delete_indices(client, s)
    old = copy.deepcopy(memories_template(s, s.embedding_dimension)["template"])
    del old["settings"]["index"]["similarity"]
    fields = old["mappings"]["properties"]["content"]["fields"]
    del fields["tf"], fields["len"]
    client.indices.create(index=s.memories_index, body={**old, "aliases": {s.memories_alias: {"is_write_index": True}}})
    assert not has_tenant_bm25_fields(client, s.memories_index)
    mems = [
        Mem("mig", "m1", "The budget review moved to Friday, the budget is tight."),
        Mem("mig", "m2", "Compost the garden beds before the first frost."),
        Mem("mig", "m3", "A long note about many things: travel, books, budget, music, friends and plans."),
    ]
    seed_memories(client, s, embedder, mems)

    assert install_memories_index(client, s, s.embedding_dimension) == s.memories_index
    assert has_tenant_bm25_fields(client, s.memories_index)
    deadline = time.monotonic() + 60
    while client.count(index=s.memories_alias, body={"query": {"exists": {"field": "content.len"}}})["count"] < 3:
        assert time.monotonic() < deadline, "the update-by-query did not fill content.len"
        time.sleep(0.5)
    client.indices.refresh(index=s.memories_alias)

    from brain_search.encoders.queries import QueryCache

    retriever = Retriever(client, s, QueryCache(embedder, 2**20))
    _, cands = candidates_of(retriever, "mig", RecallRequest(query="budget", limit=3))
    bm25 = {str(c.source["memory_id"]): c.bm25 for c in cands}
    assert bm25["m1"] > bm25["m3"] > 0.0 and bm25["m2"] == 0.0  # tf counts, length normalises
    delete_indices(client, s)


def test_memories_stored_before_recall_views_are_recalled_the_same_and_get_their_view(
    client, stack_settings, embedder
) -> None:
    """Recall reads a memory's view from doc values, not its ``_source``; memories written before
    views, or with a format-1 view (a stored field), are read from ``_source`` (one mget) until
    install stores their view, under the same version."""
    import orjson
    from opensearchpy.helpers import bulk

    from brain_search.encoders.queries import QueryCache
    from brain_search.store.documents import (
        OLD_VIEW_FIELD,
        VIEW_FIELD,
        VIEW_MARK,
        VIEW_VERSION,
        build_memory_doc,
        memory_doc_id,
        read_view,
    )

    s = stack_settings.model_copy(update={"index_prefix": f"{stack_settings.index_prefix}-views"})
    delete_indices(client, s)
    old = copy.deepcopy(memories_template(s, s.embedding_dimension)["template"])
    del old["mappings"]["properties"][VIEW_FIELD]  # an index of format-1 views: "view" and "view_v" only
    client.indices.create(index=s.memories_index, body={**old, "aliases": {s.memories_alias: {"is_write_index": True}}})
    texts = {
        "v1": "The budget review moved to Friday.",
        "v2": "Budget numbers for the garden club, with receipts.",
        "v3": "Compost the garden beds before the first frost.",
    }
    vectors = embedder.encode(list(texts.values()))
    actions = []
    for (mid, text), vec in zip(texts.items(), vectors, strict=True):
        doc = build_memory_doc(
            tenant_id="views",
            memory_id=mid,
            content=text,
            embedding=vec,
            embedding_model=embedder.name,
            node_id="Home/Budget",
            timestamp="2026-03-04T05:06:07.123456+00:00",
            conversation_id="c1",
            metadata={"kind": {"of": "note"}, "n": 3},
        )
        del doc[VIEW_FIELD], doc[VIEW_MARK]  # as written before views
        if mid == "v3":  # as written with a format-1 view (a stored field)
            doc[OLD_VIEW_FIELD], doc[VIEW_MARK] = orjson.dumps({"memory_id": mid, "content": text}).decode(), 1
        actions.append(
            {"_id": memory_doc_id("views", mid), "_routing": "views", "version": 7, "version_type": "external", **doc}
        )
    _, errors = bulk(client, actions, index=s.memories_alias, refresh="wait_for", raise_on_error=False)
    assert not errors, errors

    def recall() -> list[dict]:
        retriever = Retriever(client, s, QueryCache(embedder, 2**20))
        resp = retriever.recall("views", RecallRequest(query="budget garden", limit=3))
        return [r.model_dump(exclude={"scores"}) for r in resp.results]

    before = recall()  # no view: fields from _source
    assert {r["id"] for r in before} == set(texts)
    assert all(r["metadata"]["extra"] == {"kind": {"of": "note"}, "n": 3} for r in before)
    assert all(r["node"]["label"] == "Home/Budget" for r in before), before

    assert install_memories_index(client, s, s.embedding_dimension) == s.memories_index
    for mid in texts:
        got = client.get(index=s.memories_alias, id=memory_doc_id("views", mid), params={"routing": "views"})
        assert got["_version"] == 7 and got["_source"][VIEW_MARK] == VIEW_VERSION  # same version, view stored
        assert OLD_VIEW_FIELD not in got["_source"] and read_view(got["_source"][VIEW_FIELD])["memory_id"] == mid
    after = recall()  # from the views
    assert after == before
    delete_indices(client, s)
