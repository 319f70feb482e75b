"""Small stand-ins shared by unit tests' fake engines."""

from __future__ import annotations

from typing import Any


class NoOwnIndices:
    """``client.indices`` of an engine where no tenant has its own index (store/placement.py)."""

    def __init__(self) -> None:
        self.lookups = 0

    def get_alias(self, name: str) -> dict[str, Any]:
        self.lookups += 1
        return {}
