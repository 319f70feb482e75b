"""The user scope's one owner (``store/scope.py``) and what a key may name (``tenancy/caller.py``),
pure: the engine clauses and the by-id check agree on every document (a property test), a key held
to one user is that user on every request, and the theme of a broad question is never a node
given as scope by itself."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brain_search.errors import Forbidden
from brain_search.ingest.forget import ForgetRequest, whole_tenant
from brain_search.ingest.models import IngestRequest
from brain_search.models import RecallRequest
from brain_search.retrieval.question.theme import theme_nodes
from brain_search.store.scope import UserScope, jobs_of, owned, scope_filter
from brain_search.tenancy.caller import Caller

USERS = st.sampled_from([None, "lena", "omar", "ana"])
AGENTS = st.sampled_from([None, "assistant", "coach"])


def matches(clause: dict[str, Any], doc: dict[str, Any]) -> bool:
    """The engine's reading of the clauses the scope writes (term, exists, bool), on one document."""
    (kind, body), *_ = clause.items()
    if kind == "term":
        ((field, value),) = body.items()
        return bool(doc.get(field) == value)
    if kind == "exists":
        return doc.get(body["field"]) is not None
    if kind == "bool":
        ok = all(matches(c, doc) for c in body.get("filter", []))
        ok = ok and not any(matches(c, doc) for c in body.get("must_not", []))
        should = body.get("should", [])
        if should:
            ok = ok and sum(matches(c, doc) for c in should) >= body.get("minimum_should_match", 1)
        return ok
    raise AssertionError(f"a clause the scope should not write: {kind}")


@settings(max_examples=400, deadline=None)
@given(
    tenant=st.sampled_from(["acme", "globex"]),
    doc_tenant=st.sampled_from(["acme", "globex"]),
    user=USERS,
    agent=AGENTS,
    shared=st.booleans(),
    doc_user=USERS,
    doc_agent=AGENTS,
)
def test_the_clauses_and_the_by_id_check_agree_and_never_cross(
    tenant: str,
    doc_tenant: str,
    user: str | None,
    agent: str | None,
    shared: bool,
    doc_user: str | None,
    doc_agent: str | None,
) -> None:
    scope = UserScope(user, agent, shared)
    doc = {"tenant_id": doc_tenant, "user_id": doc_user, "agent_id": doc_agent}
    searched = all(matches(c, doc) for c in scope_filter(tenant, scope=scope))
    assert searched == (doc_tenant == tenant and scope.holds(doc))
    if searched and user is not None:  # a user's read: theirs, or the organisation's shared when asked
        assert doc_user == user or (shared and doc_user is None)
    if searched and agent is not None:
        assert doc_agent == agent or (shared and doc_user is None and doc_agent is None)
    # a write, a forget, a delete: the scope's own memories only, never the shared ones
    assert all(matches(c, doc) for c in owned(tenant, scope.own())) == (
        doc_tenant == tenant and (user is None or doc_user == user) and (agent is None or doc_agent == agent)
    )
    # a write of a chosen id moves no memory to another owner
    assert UserScope(user, agent).owns(doc) == (doc_user == user and doc_agent == agent)


def test_the_whole_tenant_writes_no_clause_and_task_records_are_found_by_their_users() -> None:
    assert UserScope().clauses() == [] and UserScope().everyone
    assert owned("acme") == [{"term": {"tenant_id": "acme"}}]
    assert jobs_of(UserScope("lena")) == [{"term": {"user_ids": "lena"}}] and jobs_of(UserScope(None, "bot")) == []


def test_a_key_held_to_a_user_is_that_user_on_every_request() -> None:
    org, lena, ro = Caller("acme"), Caller("acme", "lena"), Caller("acme", "lena", read_only=True)
    assert org.scope("omar") == UserScope("omar") and org.scope() == UserScope()
    assert lena.scope() == UserScope("lena") and lena.scope("lena", include_shared=True) == UserScope(
        "lena", None, True
    )
    with pytest.raises(Forbidden) as refused:
        lena.scope("omar")
    assert refused.value.field == "user_id"
    assert lena.recall(RecallRequest(query="dentist")).user_id == "lena"
    with pytest.raises(Forbidden):
        lena.recall(RecallRequest(query="dentist", user_id="omar"))
    # writes: each memory is the user's; one naming another is refused, naming its field
    batch = IngestRequest.model_validate({"memories": [{"content": "a"}, {"content": "b"}]})
    assert [m.user_id for m in lena.write(batch).memories] == ["lena", "lena"]
    bad = IngestRequest.model_validate({"memories": [{"content": "a"}, {"content": "b", "user_id": "omar"}]})
    with pytest.raises(Forbidden) as refused:
        lena.write(bad)
    assert refused.value.field == "memories.1.user_id"
    single = IngestRequest.model_validate({"content": "a", "user_id": "omar"})
    with pytest.raises(Forbidden) as refused:
        lena.write(single)
    assert refused.value.field == "user_id"
    assert org.write(single) is single  # the organisation names anyone
    with pytest.raises(Forbidden) as refused:
        ro.write(batch)
    assert refused.value.field == "key"
    # forgets: the user's own
    assert lena.forget(ForgetRequest(all=True)).user_id == "lena"
    assert not whole_tenant(lena.forget(ForgetRequest(all=True))) and whole_tenant(ForgetRequest(all=True))
    with pytest.raises(Forbidden):
        lena.forget(ForgetRequest(all=True, user_id="omar"))
    with pytest.raises(Forbidden):
        ro.forget(ForgetRequest(all=True))
    with pytest.raises(Forbidden):
        lena.organisation("minting keys")


def test_a_batch_user_goes_to_each_memory_that_names_none() -> None:
    req = IngestRequest.model_validate(
        {"user_id": "omar", "agent_id": "bot", "memories": [{"content": "a"}, {"content": "b", "user_id": "ana"}]}
    ).owned()
    assert [(m.user_id, m.agent_id) for m in req.memories] == [("omar", "bot"), ("ana", "bot")]
    assert req.user_id is None and req.agent_id is None


def test_a_node_given_as_scope_is_never_the_theme_by_itself() -> None:
    labels = ["Users", "Users/lena", "Users/omar", "Users/omar/Health", "Health", "Health/Fitness", "Food"]
    assert theme_nodes(labels, ["explore", "health"]) == ["Health", "Users/omar/Health"]
    assert theme_nodes(labels, ["explore", "health"], ["Users/lena"]) == []  # the bug: Lena's node was the theme
    assert theme_nodes(labels, ["health"], ["Users/omar"]) == ["Users/omar/Health"]
    assert theme_nodes(labels, ["health"], ["Health"]) == ["Health"]
    assert theme_nodes(labels, ["health"], ["Health/Fitness"]) == ["Health/Fitness"]  # the theme, narrowed
    assert theme_nodes(labels, ["everything"], ["Users"]) == []
