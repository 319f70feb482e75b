"""A broad question about a theme (spec 5.3, the Broad tier: "abstract pattern matching"): its
knowledge-graph nodes are the theme, and the memories under them are its matches.

A recall is a theme recall when its target Z is at least ``zscale.THEME_Z`` (the broad end: "explore
everything related to my health"), the target came from the query itself (``focus: auto``) and
the query names nodes of the tenant: those whose last label segment it names ("health" →
``Health``, ``Personal/Health``: one more round trip, to the graph), within the request's
``nodes`` when it gives some. Its candidates are the theme's memories, nearest in meaning first,
and all of them count as matches (they clear the relevance floor, and read at least the floor's
relevance): the caller asked for the theme.

A node given as scope is never the theme by itself (issue 67): ``nodes: ["Users/lena"]`` with
"explore everything related to my health" is a broad recall of Lena's memories, each read by its
own match, unless a node under ``Users/lena`` is named by the question (``Users/lena/Health``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from brain_search.graph.store import GraphStore, minimal_cover
from brain_search.retrieval.text import query_terms

THEME_NODES = 1000
"""the tenant's nodes a broad recall reads to find the ones its query names"""


def named_theme(graph: GraphStore, tenant_id: str, lexical_query: str, scope: Sequence[str]) -> tuple[str, ...]:
    """The theme of a broad recall of ``tenant_id`` (one round trip to the graph): the fewest node
    paths that cover the nodes its ``lexical_query`` names within ``scope`` (``theme_nodes``);
    empty when it names none."""
    labels = [n.label for n in graph.list_nodes(tenant_id, limit=THEME_NODES)]
    return tuple(minimal_cover(theme_nodes(labels, query_terms(lexical_query), scope)))


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _within(label: str, path: str) -> bool:
    path = path.strip("/")
    return label == path or label.startswith(path + "/")


def theme_nodes(labels: Iterable[str], terms: Sequence[str], scope: Sequence[str] = ()) -> list[str]:
    """The theme of a broad question: the nodes the query's ``terms`` name (``named_nodes``),
    within ``scope`` (the request's node paths) when there is one: a named node under a scope
    path, or a scope path under a named node (the theme, narrowed to the scope). No named node, no
    theme: the scope alone is never one (pure)."""
    named = named_nodes(labels, terms)
    if not scope:
        return named
    inside = [n for n in named if any(_within(n, p) for p in scope)]
    narrowed = [p.strip("/") for p in scope if any(_within(p.strip("/"), n) for n in named)]
    return sorted(set(inside) | set(narrowed))


def named_nodes(labels: Iterable[str], terms: Sequence[str]) -> list[str]:
    """The labels whose last segment the query's ``terms`` name, case and a plural ``s`` aside,
    in label order (pure)."""
    wanted = {_singular(t.lower()) for t in terms}
    return sorted(label for label in labels if _singular(label.rsplit("/", 1)[-1].lower()) in wanted)
