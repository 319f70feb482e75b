"""A broad question about a theme (spec 5.3, the Broad tier: "abstract pattern matching"): its
knowledge-graph nodes are the theme, and the memories under them are its matches.

A recall is a theme recall when its target Z is at least ``THEME_Z`` (the broad end: "explore
everything related to my health") and it is scoped to nodes: the request's ``nodes``, or, without
them and when the target came from the query itself (``focus: auto``), the tenant's nodes whose
last label segment the query names ("health" → ``Health``, ``Personal/Health``: one more round
trip, to the graph). Its candidates are the scope's memories, nearest in meaning first, and all
of them count as matches (they clear the relevance floor): the caller asked for the theme.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

THEME_Z = 0.8
"""the target Z from which a node-scoped recall returns its theme"""


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def named_nodes(labels: Iterable[str], terms: Sequence[str]) -> list[str]:
    """The labels whose last segment the query's ``terms`` name, case and a plural ``s`` aside,
    in label order (pure)."""
    wanted = {_singular(t.lower()) for t in terms}
    return sorted(label for label in labels if _singular(label.rsplit("/", 1)[-1].lower()) in wanted)
