"""Every index name of a deployment, from its one prefix (pure: ``store.indices`` installs them).

It imports nothing of the package, so ``config.Settings`` can name its indices without an import
circle through the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class HasPrefix(Protocol):
    @property
    def index_prefix(self) -> str: ...


@dataclass(frozen=True)
class IndexNames:
    prefix: str

    @classmethod
    def of(cls, settings: HasPrefix) -> IndexNames:
        return cls(settings.index_prefix)

    @property
    def memories_alias(self) -> str:
        return f"{self.prefix}-memories"

    @property
    def memories_index(self) -> str:
        """The concrete index behind the alias (a new model gets a new version and an alias swap)."""
        return f"{self.prefix}-memories-v1"

    @property
    def memories_template(self) -> str:
        return f"{self.prefix}-memories"

    @property
    def memories_pattern(self) -> str:
        return f"{self.prefix}-memories-*"

    @property
    def tenants(self) -> str:
        return f"{self.prefix}-tenants"

    @property
    def keys(self) -> str:
        return f"{self.prefix}-keys"

    @property
    def nodes(self) -> str:
        return f"{self.prefix}-nodes"

    @property
    def node_tasks(self) -> str:
        return f"{self.prefix}-node-tasks"

    @property
    def ingest_tasks(self) -> str:
        return f"{self.prefix}-ingest-tasks"

    @property
    def dead_letters(self) -> str:
        return f"{self.prefix}-dead-letters"

    @property
    def memory_history(self) -> str:
        return f"{self.prefix}-memory-history"

    @property
    def audit(self) -> str:
        return f"{self.prefix}-audit"

    @property
    def feedback(self) -> str:
        return f"{self.prefix}-feedback"

    @property
    def everything(self) -> str:
        """The pattern of every index and template of this prefix."""
        return f"{self.prefix}-*"
