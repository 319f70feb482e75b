"""The load mix: recall requests across the five intent tiers and the request shapes of spec 4.1,
over several tenants, plus a share of writes. Built once by the runner (deterministic per seed)
and written to a JSON file the Locust users read, so the service and the bare engine replay the
same requests.

Kinds (weights from ``BRAIN_LOAD_MIX``, e.g. ``auto=50,focus=15,z_value=10,tiered=10,nodes=10,write=5``):
- ``auto``: intent detection on a real question phrased for one of the five tiers (exact quotes a
  span of one of the tenant's memories; precise/conceptual/broad wrap its topic words);
- ``focus``: an explicit preset; ``z_value``: an explicit target; ``tiered``: ``tiered=true``;
- ``nodes``: filtered to one knowledge-graph node (a LoCoMo session) of the tenant;
- ``write``: ``POST /v1/memories`` with one new memory (only when the service has that route).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from brain_lab.bench.corpus import LOADTEST_SOURCE, Pool
from brain_search.models import Focus
from brain_search.retrieval.text import query_terms

KINDS = ("auto", "focus", "z_value", "tiered", "nodes", "write")
DEFAULT_MIX = "auto=50,focus=15,z_value=10,tiered=10,nodes=10,write=5"
TIER_TEMPLATES: dict[str, tuple[str, ...]] = {
    "exact": ('Find where I said "{span}"', 'the exact words "{span}"', '"{span}"'),
    "precise": ("The conversation about {topic}", "who mentioned {topic}", "remind me what was said about {topic}"),
    "balanced": ("{question}",),
    "conceptual": ("My thinking on {topic}", "what do I think about {topic}", "my views on {topic}"),
    "broad": ("Ideas related to {topic}", "themes around {topic}", "explore anything similar to {topic}"),
}


def parse_mix(text: str) -> dict[str, float]:
    """``"auto=50,write=5"`` → normalised weights; unknown kinds are an error, not ignored."""
    weights: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in KINDS:
            raise ValueError(f"unknown load kind {name!r}; known: {', '.join(KINDS)}")
        weights[name] = float(value)
    total = sum(weights.values())
    if total <= 0:
        raise ValueError("the load mix has no positive weight")
    return {k: v / total for k, v in weights.items() if v > 0}


@dataclass(frozen=True)
class Item:
    tenant: str
    kind: str
    tier: str | None
    body: dict[str, Any]


@dataclass
class Workload:
    items: list[Item]
    mix: dict[str, float]
    counts: dict[str, int] = field(default_factory=dict)

    def recalls(self) -> list[Item]:
        return [it for it in self.items if it.kind != "write"]


def _span(text: str, rng: random.Random) -> str:
    words = re.findall(r"[A-Za-z][A-Za-z']+", text.split(": ", 1)[-1])
    if len(words) < 3:
        return " ".join(words) or text[:30]
    n = rng.randint(3, min(5, len(words)))
    start = rng.randint(0, len(words) - n)
    return " ".join(words[start : start + n])


def _topic(question: str) -> str:
    return " ".join(query_terms(question)[:4]) or question


def build_workload(
    pool: Pool,
    n: int,
    mix: dict[str, float],
    *,
    with_writes: bool,
    seed: int = 11,
) -> Workload:
    """``n`` requests drawn with ``mix`` over the pool's tenants (uniformly)."""
    rng = random.Random(seed)
    weights = {k: v for k, v in mix.items() if with_writes or k != "write"}
    kinds, probs = list(weights), list(weights.values())
    by_tenant: dict[str, list[int]] = {}
    nodes: dict[str, list[str]] = {}
    for i, (tenant, m) in enumerate(pool.memories):
        by_tenant.setdefault(tenant, []).append(i)
        if m.node_id:
            nodes.setdefault(tenant, [])
            if not nodes[tenant] or nodes[tenant][-1] != m.node_id:
                nodes[tenant].append(m.node_id)
    tenants = [t for t in pool.tenants if pool.queries.get(t)]
    items: list[Item] = []
    counts: dict[str, int] = {}
    for i in range(n):
        tenant = rng.choice(tenants)
        kind = rng.choices(kinds, probs)[0]
        question = rng.choice(pool.queries[tenant])
        tier: str | None = None
        body: dict[str, Any]
        if kind == "write":
            _, m = pool.memories[rng.choice(by_tenant[tenant])]
            body = {
                "memory_id": f"load-{seed}-{i}",
                "content": f"{m.content} (noted again)",
                "node_id": m.node_id,
                "source": LOADTEST_SOURCE,
            }
        elif kind == "auto":
            tier = rng.choice(list(TIER_TEMPLATES))
            template = rng.choice(TIER_TEMPLATES[tier])
            _, m = pool.memories[rng.choice(by_tenant[tenant])]
            body = {"query": template.format(span=_span(m.content, rng), topic=_topic(question), question=question)}
        elif kind == "focus":
            tier = rng.choice([f.value for f in Focus if f is not Focus.auto])
            body = {"query": question, "focus": tier}
        elif kind == "z_value":
            body = {"query": question, "z_value": round(rng.random(), 2)}
        elif kind == "tiered":
            body = {"query": question, "tiered": True, "limit": 5}
        else:  # nodes
            body = {"query": question, "nodes": [rng.choice(nodes[tenant])]}
        items.append(Item(tenant, kind, tier, body))
        counts[kind] = counts.get(kind, 0) + 1
    return Workload(items, weights, counts)
