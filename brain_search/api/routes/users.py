"""The users of an organisation (a tenant): keys held to one user, and forgetting a user.

A user is not an object of its own: it is the ``user_id`` its memories carry
(``store/scope.py``). The organisation's key mints, lists and revokes the keys of its users; a
user is forgotten (every memory, version, dead letter, task record and recall record of theirs)
by ``DELETE /v1/users/{user_id}``, as a forget task (``ingest/forget.py``: restart-safe).
"""

from __future__ import annotations

from typing import Annotated

from brain_search_client.models.admin import KeyIn, KeyInfo, KeyOut, UserKeyIn
from brain_search_client.models.forget import ForgetRequest, UserForgotten
from brain_search_client.models.memory import OWNER_ID_PATTERN
from fastapi import APIRouter, Path, status

from brain_search.api.deps import OrganisationDep, StateDep, WriterDep
from brain_search.api.routes.admin import mint_key
from brain_search.tenancy.audit import tenant_hash

router = APIRouter(prefix="/v1/users", tags=["users"])
UserPath = Annotated[
    str,
    Path(pattern=OWNER_ID_PATTERN, min_length=1, max_length=256, description="the user's id inside the organisation"),
]


@router.post("/{user_id}/keys", status_code=status.HTTP_201_CREATED)
def create_user_key(user_id: UserPath, body: UserKeyIn, tenant: OrganisationDep, state: StateDep) -> KeyOut:
    """A key held to ``user_id`` (the organisation's key only): every door reads and writes that
    user's memories with it, and a request naming another user is a 403. Shown once."""
    key = KeyIn.model_validate({**body.model_dump(exclude_unset=True), "user_id": user_id})
    return mint_key(state, tenant, key, actor="organisation")


@router.get("/{user_id}/keys")
def list_user_keys(user_id: UserPath, tenant: OrganisationDep, state: StateDep) -> list[KeyInfo]:
    """The keys held to ``user_id``, without their secrets (the organisation's key only)."""
    return [KeyInfo(**k) for k in state.keys.list_keys(tenant, user_id)]


@router.delete("/{user_id}/keys/{key_id}", status_code=status.HTTP_204_NO_CONTENT)
def revoke_user_key(user_id: UserPath, key_id: str, tenant: OrganisationDep, state: StateDep) -> None:
    """Revoke a key held to ``user_id`` (404 for a key of another user or tenant): refused at once
    by this API process, within 5 s by every other (the key cache)."""
    state.keys.revoke_key(key_id, tenant_id=tenant, user_id=user_id)
    state.audit.record("key.revoke", tenant, key_id, actor="organisation")


@router.delete("/{user_id}", status_code=status.HTTP_202_ACCEPTED)
def forget_user(user_id: UserPath, caller: WriterDep, state: StateDep) -> UserForgotten:
    """Forget a user: the keys held to them (at once), then every memory of theirs (tombstoned as
    any forget: no write accepted before it brings one back), their memories' history and dead
    letters, the records of ended tasks that wrote for them and the records of their recalls
    (feedback). A task: follow it at ``GET /v1/forget/{task_id}``, whose counts say what was
    removed; an API killed meanwhile leaves it to another, which runs it to its end."""
    user = caller.user_for(user_id, "user_id")
    assert user is not None  # the path names one
    keys = state.keys.forget_user_keys(caller.tenant_id, user)
    started = state.ingest.forget(caller.tenant_id, ForgetRequest(user_id=user, all=True), state.graph)
    actor = "user" if caller.held else "organisation"
    detail = {"user_hash": tenant_hash(user), "keys": keys}
    state.audit.record("user.forget", caller.tenant_id, detail=detail, actor=actor)
    return UserForgotten(**started.model_dump(), keys=keys)
