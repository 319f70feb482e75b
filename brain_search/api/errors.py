"""Errors → HTTP, in one place. Failures are raised, never turned into "no results"."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from brain_search_client.models.inputs import json_problem, printable
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, TransportError

from brain_search.errors import (
    ECHO_CHARS,
    MESSAGE_CHARS,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    PreconditionFailed,
    RateLimited,
    StoreUnavailable,
    Unauthorized,
    cut,
)

log = logging.getLogger(__name__)
MAX_ERRORS = 50  # a 422 lists at most this many errors (a batch of bad items is not echoed whole)


def invalid_input_body(exc: InvalidInput) -> dict:
    """Same shape as FastAPI's own validation errors: a list naming the field and the reason."""
    msg = cut(printable(exc.reason), MESSAGE_CHARS)
    loc = [exc.where, *(cut(printable(part)) for part in exc.field.split("."))]
    return {"detail": [{"loc": loc, "msg": msg, "type": "value_error"}]}


def bounded_input(value: Any) -> Any:
    """What a 422 echoes of the input: the value when short, else a prefix of it (of its JSON for
    an object or a list), saying how long it was; text that is no valid Unicode (a lone
    surrogate) with its escapes written out, and a value too deep to write as a note saying so."""
    if isinstance(value, str):
        return cut(printable(value))
    if value is None or isinstance(value, bool | int | float):
        return value
    if json_problem(value) is not None:  # too deep, or a lone surrogate inside: echoed as text
        try:
            return cut(printable(json.dumps(value, default=str, ensure_ascii=False)))
        except (RecursionError, ValueError):
            return "(not echoed: nested too deep)"
    text = json.dumps(value, default=str, ensure_ascii=False)
    return value if len(text) <= ECHO_CHARS else cut(text)


def validation_body(errors: Sequence[Any]) -> dict[str, Any]:
    """FastAPI's 422 shape (``detail``: loc, msg, type, input, ctx), bounded: each echoed input is
    a prefix, each message and location part is cut, and at most ``MAX_ERRORS`` are listed."""
    detail = []
    # inputs are bounded before they are encoded: a deep one would take the encoder's recursion
    raw = [{k: bounded_input(v) if k in ("input", "ctx") else v for k, v in e.items()} for e in errors[:MAX_ERRORS]]
    for err in jsonable_encoder(raw):
        err["loc"] = [x if isinstance(x, int) else cut(printable(str(x))) for x in err.get("loc", [])]
        err["msg"] = cut(printable(str(err.get("msg", ""))), MESSAGE_CHARS)
        if "input" in err:
            err["input"] = bounded_input(err["input"])
        if "ctx" in err:
            err["ctx"] = bounded_input(err["ctx"])
        detail.append(err)
    body: dict[str, Any] = {"detail": detail}
    if len(errors) > MAX_ERRORS:
        body["errors_not_listed"] = len(errors) - MAX_ERRORS
    return body


NOT_JSON = "body: send it as JSON, with the header `content-type: application/json`"


def not_json(request: Request, errors: Sequence[Any]) -> bool:
    """A body that was sent but not as JSON (no ``content-type: application/json``): FastAPI took
    it as text, and its message ("Input should be a valid dictionary") does not say why."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    body_itself = any(tuple(e.get("loc", ())) == ("body",) and e.get("type") != "missing" for e in errors)
    return body_itself and not (ctype == "application/json" or ctype.endswith("+json"))


def single_memory_locs(errors: Sequence[Any], body: Any) -> list[Any]:
    """One memory sent at the top level (``POST /v1/memories`` without ``memories``): its errors
    name its field (``content``), not the batch it became (``memories.0.content``)."""
    from brain_search.ingest.models import single_memory

    if not single_memory(body):
        return list(errors)
    out = []
    for e in errors:
        loc = tuple(e.get("loc", ()))
        out.append({**e, "loc": ("body", *loc[3:])} if loc[:3] == ("body", "memories", 0) else e)
    return out


def _count(request: Request, kind: str) -> None:
    brain = getattr(request.app.state, "brain", None)
    if brain is not None:
        brain.metrics.engine_errors.labels(kind).inc()


def unauthorized_response(exc: Unauthorized) -> JSONResponse:
    """401 with the reason (the HTTP routes and the MCP mount alike)."""
    return JSONResponse({"detail": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"})


def rate_limited_response(brain: Any, exc: RateLimited) -> JSONResponse:
    """429 with Retry-After, counted in ``brain_requests_refused_total`` (``brain``: the AppState)."""
    if brain is not None:
        brain.metrics.refused.labels("rate_limited").inc()
    headers = {"Retry-After": str(exc.retry_after_s)}
    return JSONResponse({"detail": str(exc), "retry_after_s": exc.retry_after_s}, status_code=429, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _unprocessable(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if not_json(request, errors):
            return JSONResponse({"detail": NOT_JSON}, status_code=415)
        return JSONResponse(validation_body(single_memory_locs(errors, exc.body)), status_code=422)

    @app.exception_handler(InvalidInput)
    async def _invalid(_: Request, exc: InvalidInput) -> JSONResponse:
        return JSONResponse(invalid_input_body(exc), status_code=422)

    @app.exception_handler(NotFound)
    async def _not_found(_: Request, exc: NotFound) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(Conflict)
    async def _conflict(_: Request, exc: Conflict) -> JSONResponse:
        return JSONResponse({"detail": exc.reason, **exc.details}, status_code=409)

    @app.exception_handler(PreconditionFailed)
    async def _precondition(_: Request, exc: PreconditionFailed) -> JSONResponse:
        headers = {"ETag": f'"{exc.actual}"'} if exc.actual is not None else {}
        return JSONResponse({"detail": str(exc), "version": exc.actual}, status_code=412, headers=headers)

    @app.exception_handler(Unauthorized)
    async def _unauthorized(_: Request, exc: Unauthorized) -> JSONResponse:
        return unauthorized_response(exc)

    @app.exception_handler(Forbidden)
    async def _forbidden(_: Request, exc: Forbidden) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "field": exc.field}, status_code=403)

    @app.exception_handler(RateLimited)
    async def _rate_limited(request: Request, exc: RateLimited) -> JSONResponse:
        return rate_limited_response(getattr(request.app.state, "brain", None), exc)

    @app.exception_handler(StoreUnavailable)
    async def _unavailable(request: Request, exc: StoreUnavailable) -> JSONResponse:
        _count(request, "unavailable")
        return JSONResponse({"detail": f"store unavailable: {exc}"}, status_code=503)

    @app.exception_handler(OSConnectionError)
    @app.exception_handler(ConnectionTimeout)
    async def _os_down(request: Request, exc: Exception) -> JSONResponse:
        _count(request, "unreachable")
        log.warning("OpenSearch unreachable: %s", exc)
        return JSONResponse({"detail": "store unavailable: OpenSearch did not answer"}, status_code=503)

    @app.exception_handler(TransportError)
    async def _os_error(request: Request, exc: TransportError) -> JSONResponse:
        status = exc.status_code if isinstance(exc.status_code, int) else 500
        _count(request, f"status_{status}")
        log.error("OpenSearch error %s: %s", status, exc.error)
        code = 503 if status >= 500 or status == 429 else 502
        return JSONResponse({"detail": f"store error {status}: {exc.error}"}, status_code=code)
