"""The client and the API agree (issue 69): every route of the API's OpenAPI document has a method
on the client (the sync and the async one alike), and every model a route takes or answers is
defined once, in the client package, which the service imports."""

from __future__ import annotations

from typing import Any

import pydantic
from brain_search_client import AdminClient, AsyncAdminClient, AsyncBrainClient, BrainClient
from brain_search_client._common import routes_of
from fastapi.routing import APIRoute

from brain_search.api.app import ROUTERS, create_app
from brain_search.config import load_settings

METHODS = {"get", "post", "put", "patch", "delete"}


def _app() -> Any:
    return create_app(load_settings())


def _openapi_routes() -> set[tuple[str, str]]:
    paths = _app().openapi()["paths"]
    return {(m.upper(), p.replace(":path", "")) for p, ops in paths.items() for m in ops if m in METHODS}


def test_every_route_has_a_method_on_both_clients() -> None:
    routes = _openapi_routes()
    assert len(routes) > 40
    for tenant, admin in (
        (BrainClient("http://x"), AdminClient("http://x")),
        (AsyncBrainClient("http://x"), AsyncAdminClient("http://x")),
    ):
        covered = routes_of(tenant) | routes_of(admin)
        assert routes - covered == set(), f"routes without a client method: {sorted(routes - covered)}"
        assert covered - routes == set(), f"client methods of no route: {sorted(covered - routes)}"


def _models(annotation: Any) -> list[type[pydantic.BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _models(arg)]


def test_every_model_a_route_takes_or_answers_is_the_client_packages() -> None:
    seen: set[str] = set()
    for route in [r for router in ROUTERS for r in router.routes]:
        if not isinstance(route, APIRoute) or not route.include_in_schema:
            continue
        models = _models(route.response_model)
        if route.body_field is not None:
            models += _models(route.body_field.field_info.annotation)
        for extra in route.responses.values():
            models += _models(extra.get("model"))
        for model in models:
            seen.add(model.__name__)
            assert model.__module__.startswith("brain_search_client.models."), (route.path, model)
    assert {"RecallRequest", "RecallResponse", "IngestRequest", "TaskAccepted", "WriteOutcome", "Node"} <= seen
