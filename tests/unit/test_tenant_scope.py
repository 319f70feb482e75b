"""Tenant isolation has one owner (issue 70): ``store/scope.py``. No other module of the service or
the workers names the tenant field (``grep -rn '"tenant_id"' brain_search workers`` finds it only
in the owner, the mappings and the models) or builds a filter on it, and ``TenantScope`` carries
the index, the routing and the tenant's and user's clauses of one recall or write."""

from __future__ import annotations

import ast
from pathlib import Path

from brain_search.store.scope import (
    TENANT_FIELD,
    TenantScope,
    UserScope,
    owned,
    scope_filter,
    tenant_documents,
    tenant_of,
    tenant_term,
)

ROOT = Path(__file__).resolve().parents[2]
OWNER = "brain_search/store/scope.py"
ALLOWED = (OWNER, "brain_search/store/mappings.py", "brain_search/models/")
"""where the field's name may be written: its owner, the index mappings and the API models"""


def sources() -> dict[str, str]:
    out = {}
    for pkg in ("brain_search", "workers"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            out[str(path.relative_to(ROOT))] = path.read_text()
    return out


def named_field(text: str) -> list[int]:
    """Lines that write the tenant field's name as a string (what the issue's grep finds)."""
    return [i for i, line in enumerate(text.splitlines(), 1) if '"tenant_id"' in line or "'tenant_id'" in line]


def tenant_filters(text: str) -> list[int]:
    """Lines of a ``{"term"/"terms": {<the tenant field>: …}}`` clause, however the field is named."""

    def is_tenant_field(node: ast.expr | None) -> bool:
        if isinstance(node, ast.Constant):
            return node.value == TENANT_FIELD
        if isinstance(node, ast.Name):
            return node.id == "TENANT_FIELD"
        return isinstance(node, ast.Attribute) and node.attr == "TENANT_FIELD"

    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            clause = isinstance(key, ast.Constant) and key.value in ("term", "terms") and isinstance(value, ast.Dict)
            if clause and any(is_tenant_field(k) for k in value.keys):  # type: ignore[attr-defined]
                found.append(node.lineno)
    return found


def test_no_module_but_the_owner_names_the_tenant_field_or_filters_on_it() -> None:
    named = [
        f"{path}:{line}"
        for path, text in sources().items()
        if not path.startswith(ALLOWED)
        for line in named_field(text)
    ]
    assert named == [], "the tenant field is named outside store/scope.py:\n" + "\n".join(named)
    filters = [f"{path}:{line}" for path, text in sources().items() if path != OWNER for line in tenant_filters(text)]
    assert filters == [], "a tenant filter is written outside store/scope.py:\n" + "\n".join(filters)
    assert tenant_filters(sources()[OWNER]) != []  # the owner writes it (the check sees one)


def test_the_checks_see_a_tenant_filter_written_by_hand() -> None:
    by_name = 'q = {"bool": {"filter": [{"term": {"tenant_id": t}}]}}'
    by_constant = "q = [{'terms': {TENANT_FIELD: [t]}}]"
    assert named_field(by_name) == [1] and tenant_filters(by_name) == [1]
    assert named_field(by_constant) == [] and tenant_filters(by_constant) == [1]
    assert tenant_filters('q = {"term": {"user_id": u}}') == []


class Placement:
    def __init__(self, own: dict[str, str]) -> None:
        self.own = own

    def index(self, tenant_id: str) -> str:
        return self.own.get(tenant_id, "memories")


def test_a_scope_is_the_tenants_index_routing_and_clauses() -> None:
    placement = Placement({"acme": "memories-tenant-acme"})
    lena = UserScope("lena", include_shared=True)
    scope = TenantScope.of(placement, "acme", lena)
    assert scope.index == "memories-tenant-acme" and TenantScope.of(placement, "other").index == "memories"
    assert scope.routing == "acme" and scope.params(refresh="true") == {"routing": "acme", "refresh": "true"}
    assert scope.filters() == owned("acme", lena) == [tenant_term("acme"), *lena.clauses()]
    assert scope.tenant_only() == [{"term": {"tenant_id": "acme"}}]
    assert scope.memories(["a/b"], "2024-01-01", exclude_memories=["m1"]) == scope_filter(
        "acme", ["a/b"], "2024-01-01", exclude_memories=["m1"], scope=lena
    )
    assert TenantScope.of(placement, "acme").user == UserScope() and scope.for_user(UserScope()).index == scope.index


def test_a_scope_holds_its_tenants_documents_that_its_user_reads() -> None:
    scope = TenantScope("acme", "memories", UserScope("lena", include_shared=True))
    assert scope.holds({"tenant_id": "acme", "user_id": "lena"})
    assert scope.holds({"tenant_id": "acme"})  # shared
    assert not scope.holds({"tenant_id": "acme", "user_id": "max"})
    assert not scope.holds({"tenant_id": "other", "user_id": "lena"})
    assert not scope.holds({"tombstone_of": "acme"}) and tenant_of({"tombstone_of": "acme"}) is None
    either = tenant_documents("acme")["bool"]["should"]
    assert either == [tenant_term("acme"), {"term": {"tombstone_of": "acme"}}]
