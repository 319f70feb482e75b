"""Who a request acts for: a tenant, and for a key held to one user, that user (``Caller``).

An organisation's key (no ``user_id``) acts for the whole tenant, or for any of its users it names
(``user_id`` in a body or the query). A key held to one user (minted with ``user_id``,
``tenancy/auth.py``) acts as that user on every door, the HTTP API, MCP and the CLI alike:

- a request that names no user is that user's;
- a request that names another user is refused (``Forbidden``, HTTP 403, naming the field);
- it never reaches the organisation's own operations (nodes moved or deleted, keys minted);
- with ``read_only`` it only reads (recall, list, get, history, export, feedback).

Every door turns what it received into the scope it reads (``UserScope``, ``store/scope.py``)
through these methods (a write through ``Caller.write``, a forget through
``Caller.forget``, which ask ``user_for``), so there is one place that says what a key
may name.
"""

from __future__ import annotations

from dataclasses import dataclass

from brain_search_client.models.forget import ForgetRequest
from brain_search_client.models.ingest import IngestRequest

from brain_search.errors import Forbidden
from brain_search.models import RecallRequest
from brain_search.store.scope import UserScope

USER_FIELD = "user_id"


@dataclass(frozen=True)
class Caller:
    """The tenant of a key, the user it is held to (None: the organisation's key) and whether it
    only reads."""

    tenant_id: str
    user_id: str | None = None
    read_only: bool = False

    @property
    def held(self) -> bool:
        """A key held to one user."""
        return self.user_id is not None

    # ------------------------------------------------------------------ what it may name
    def user_for(self, user_id: str | None, field: str = USER_FIELD) -> str | None:
        """The user a request acts for: the one it names (an organisation's key: any, or none), or,
        for a user's key, its user (``Forbidden`` naming ``field`` when the request names another)."""
        if self.user_id is None:
            return user_id
        if user_id is not None and user_id != self.user_id:
            raise Forbidden(field, "this key is held to another user; it reads and writes its own user's memories only")
        return self.user_id

    def scope(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        include_shared: bool = False,
        field: str = USER_FIELD,
    ) -> UserScope:
        """The scope of a read that names ``user_id`` / ``agent_id`` (``include_shared``: and the
        organisation's shared memories)."""
        return UserScope(self.user_for(user_id, field), agent_id, include_shared)

    def writer(self) -> Caller:
        """This caller, when it may write (``Forbidden`` for a read-only key)."""
        if self.read_only:
            raise Forbidden("key", "this key is read-only: it recalls and reads, it does not write or delete")
        return self

    def organisation(self, what: str) -> Caller:
        """This caller, when it is the organisation's writing key (``Forbidden`` for a key held to
        one user: ``what`` reaches past one user)."""
        if self.held:
            raise Forbidden("key", f"{what} needs the organisation's key: this key is held to one user")
        return self.writer()

    # ------------------------------------------------------------------ requests, as this caller
    def recall(self, req: RecallRequest) -> RecallRequest:
        """The recall as this caller may make it: a user's key recalls its user's memories."""
        user = self.user_for(req.user_id)
        return req if user == req.user_id else req.model_copy(update={"user_id": user})

    def write(self, req: IngestRequest) -> IngestRequest:
        """The write as this caller may make it: a user's key writes its user's memories (a memory
        naming another user is ``Forbidden``, naming its field); a read-only key writes nothing."""
        self.writer()
        if not self.held:
            return req
        user = self.user_for(req.user_id)
        memories = []
        for i, m in enumerate(req.memories):
            own = self.user_for(m.user_id, "user_id" if req.single else f"memories.{i}.user_id")
            memories.append(m if m.user_id == own else m.model_copy(update={"user_id": own}))
        return req.replaced(memories=memories, user_id=user)

    def forget(self, req: ForgetRequest) -> ForgetRequest:
        """The forget as this caller may make it: a user's key forgets its user's memories only; a
        read-only key forgets nothing."""
        user = self.writer().user_for(req.user_id)
        return req if user == req.user_id else req.model_copy(update={"user_id": user})
