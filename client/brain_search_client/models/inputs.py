"""What every door takes (HTTP bodies and query strings, the MCP tools, the CLI), as pydantic types
shared by the models at the edges, so that a value the queue, the job signature or the engine
cannot take is a 422 naming the field before anything is queued (issue 54, items 1 and 6):

- ``Text``: valid Unicode. A lone UTF-16 surrogate (the JSON escape ``\\ud800`` without its pair)
  decodes in Python but has no UTF-8 form: orjson (job signing), the engine and the model refuse
  it, so a write holding one was a 202 that never landed and stalled the queue behind it.
- ``EngineTime``: a time the engine can store and compare: a UTC offset within ±18:00 (Python
  takes up to ±24 h, OpenSearch refuses past 18) and a UTC form in years 1–9999
  (``0001-01-01T00:00:00+01:00`` has none: an OverflowError, a 500).
- ``JsonObject``: a JSON object at most ``MAX_JSON_DEPTH`` levels deep whose keys and strings
  are ``Text``; walked without recursion (450 levels deep was a RecursionError, a 500). The
  deployment's own, lower limits (``BRAIN_INGEST_MAX_METADATA_DEPTH`` and bytes) are checked
  after it (``ingest/prepare.py``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

MAX_UTC_OFFSET_S = 18 * 3600  # the engine's limit
MAX_JSON_DEPTH = 32  # nesting any door takes; every later step (json, orjson, pydantic) is safe well past it
_PATH_CHARS = 80  # a path in a message, at most
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")  # a date alone, ISO 8601


def lone_surrogate(text: str) -> int | None:
    """The index of the first lone UTF-16 surrogate in ``text``, or None when it is valid Unicode."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def printable(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``): safe to echo in an
    answer, a log line or a terminal."""
    return text if lone_surrogate(text) is None else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _surrogate_reason(at: int) -> str:
    return f"holds a lone UTF-16 surrogate at character {at} (not valid Unicode text): send the text as UTF-8"


def clean_text(v: str) -> str:
    at = lone_surrogate(v)
    if at is not None:
        raise ValueError(_surrogate_reason(at))
    return v


def _join(path: str, key: str | int) -> str:
    part = f"[{key}]" if isinstance(key, int) else (f".{printable(key)}" if path else printable(key))
    return (path + part)[:_PATH_CHARS]


def json_problem(value: Any, max_depth: int = MAX_JSON_DEPTH) -> tuple[str, str] | None:
    """(path inside ``value``, reason) of the first part no door takes — nested deeper than
    ``max_depth`` (a scalar is 0, ``{"a": 1}`` is 1), or a key or string with a lone surrogate —
    or None. Iterative: any depth is walked without recursion."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, str):
            if (at := lone_surrogate(node)) is not None:
                return path, _surrogate_reason(at)
            continue
        if not isinstance(node, dict | list):
            continue
        if depth + 1 > max_depth:
            return path, f"nested more than {max_depth} levels deep"
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and (at := lone_surrogate(k)) is not None:
                    return _join(path, k), "the key " + _surrogate_reason(at)
                stack.append((v, depth + 1, _join(path, k)))
        else:
            stack.extend((v, depth + 1, _join(path, i)) for i, v in enumerate(node))
    return None


def json_depth(value: Any) -> int:
    """Nesting depth of a JSON value (a scalar is 0, ``{"a": 1}`` is 1, ``{"a": [1]}`` is 2),
    without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
        else:
            continue
        deepest = max(deepest, depth + 1)
    return deepest


def clean_json(v: dict[str, Any]) -> dict[str, Any]:
    problem = json_problem(v)
    if problem is not None:
        path, reason = problem
        raise ValueError(f"{path}: {reason}" if path else reason)
    return v


def engine_time(v: datetime) -> datetime:
    """A time the engine can store and compare (naive times are UTC, as everywhere)."""
    if v.tzinfo is None:
        return v
    offset = v.utcoffset()
    if offset is not None and abs(offset.total_seconds()) > MAX_UTC_OFFSET_S:
        raise ValueError("the UTC offset must be within ±18:00")
    try:
        v.astimezone(UTC)
    except OverflowError:
        raise ValueError("the time is outside the supported range (years 1–9999 in UTC)") from None
    return v


def end_of_date(v: Any) -> Any:
    """An ``until`` given as a date alone (``2026-02-28``) is the end of that day, as in the CLI:
    it keeps what happened on the 28th."""
    if isinstance(v, str) and _DATE.fullmatch(v.strip()):
        return f"{v.strip()}T23:59:59.999999"
    return v


Text = Annotated[str, AfterValidator(clean_text)]
EngineTime = Annotated[datetime, AfterValidator(engine_time)]
EngineUntil = Annotated[datetime, BeforeValidator(end_of_date), AfterValidator(engine_time)]
"""the end of a time range: a date alone is the end of that day (``EngineTime`` otherwise)"""
JsonObject = Annotated[dict[str, Any], AfterValidator(clean_json)]
