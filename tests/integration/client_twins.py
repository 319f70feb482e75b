"""The sync and the async client behind one face, so a real-stack test body runs against both:
``Twin(client)`` calls a method and, for the async client, runs the coroutine to its end on the
test's own event loop; an iterator (sync or async) comes back as a list."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any


class Twin:
    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop | None) -> None:
        self._target = target
        self._loop = loop

    def _run(self, value: Any) -> Any:
        if inspect.iscoroutine(value):
            assert self._loop is not None
            return self._run(self._loop.run_until_complete(value))
        if inspect.isasyncgen(value):
            assert self._loop is not None

            async def collect() -> list[Any]:
                return [x async for x in value]

            return self._loop.run_until_complete(collect())
        if inspect.isgenerator(value):
            return list(value)
        if hasattr(value, "_t") and hasattr(value, "memories"):  # a client a method made (tenant_client)
            return Twin(value, self._loop)
        return value

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if callable(attr):
            return lambda *a, **kw: self._run(attr(*a, **kw))
        if hasattr(attr, "_t"):  # a resource: memories, nodes ...
            return Twin(attr, self._loop)
        return attr

    def close(self) -> None:
        self._run(self._target.close())
