"""Fences: how a forget reaches writes still queued when it runs.

A forget (``ingest/forget.py``) tombstones the memories it finds stored; a write of a memory id
never stored before, accepted before the forget and still waiting in the queue, is found by no
search. So before it searches, a forget leaves a **fence** for what it matches: a small document
in the tenant's memories index, keyed by the forget's filters (``fence/{"node": "Travel"}``,
``fence/all`` for the whole tenant), written with the forget's version. A memory id cannot hold
``/``, so no memory ever has a fence's id.

Every ingest job looks up the fences its items fall under (one real-time ``mget``, the same the
worker role already makes for tombstones) before it writes, and again after: an item under a
fence newer than the job's own acceptance version is superseded, or buried with the fence's
version if it was written meanwhile. Either the forget's search sees a write (it landed before
the forget refreshed), or the job's second look sees the fence (written before that search).

A fence is a tombstone by its fields (``tombstone_of``, no ``tenant_id``): every read leaves it
out, a move carries it, an erase deletes it, and it is purged with the tombstones after
``tombstone_ttl_s``, the longest a write may wait. Filters by time (``since``, ``until``) leave no
fence: a queued write of a new memory id within such a range is not covered.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from itertools import product

FENCE_PREFIX = "fence/"
ALL = f"{FENCE_PREFIX}all"
FENCED = ("node", "conversation_id", "source", "user_id", "agent_id")
"""the filters a fence keys on, in order; ``node`` matches the node's whole subtree"""


def fence_key(filters: Mapping[str, str | None]) -> str:
    """The fence of a forget by ``filters`` (pure): their set values, keyed as ``FENCED`` names
    them; ``fence/all`` when none is set (the whole tenant)."""
    given = {k: str(v).strip("/") if k == "node" else str(v) for k in FENCED if (v := filters.get(k))}
    if not given:
        return ALL
    return FENCE_PREFIX + json.dumps(given, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _ancestors(node_path: str | None) -> list[str]:
    """``A/B/C`` → ``A``, ``A/B``, ``A/B/C`` (pure)."""
    parts = [p for p in (node_path or "").strip("/").split("/") if p]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def keys_of(node_path: str | None, values: Mapping[str, str | None]) -> list[str]:
    """Every fence a memory falls under (pure): each combination of its node's ancestors (or no
    node), and each other fenced value it has (or none)."""
    choices: list[list[str | None]] = []
    for k in FENCED:
        if k == "node":
            choices.append([None, *_ancestors(node_path)])
        else:
            v = values.get(k)
            choices.append([None, v] if v else [None])
    return sorted({fence_key(dict(zip(FENCED, combo, strict=True))) for combo in product(*choices)})


def fenced(keys_by_item: Mapping[str, Iterable[str]], fences: Mapping[str, int], version: int) -> dict[str, int]:
    """item → the newest fence over it that is newer than ``version`` (pure)."""
    out = {}
    for item, keys in keys_by_item.items():
        newest = max((fences[k] for k in keys if k in fences), default=0)
        if newest > version:
            out[item] = newest
    return out
