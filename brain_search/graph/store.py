"""X-axis: knowledge-graph nodes, stored per tenant in their own index.

A node has a stable ``id`` and a ``label`` that is a path (``aiConnected/Brain/Architecture``);
its parent is derived from the path and always exists as a node too (creating a node creates its
missing ancestors). Related-node edges are kept on both ends (``related`` lists of ids).
Memories carry ``node_id`` and ``node_path`` (the label), and recall filters by label path, which
includes the whole subtree: ``aiConnected/Brain`` matches ``aiConnected/Brain/Architecture`` but
neither ``aiConnected`` nor ``aiConnected/Web``.

Operations that also touch the memories (move, delete) live in ``graph/ops.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import secrets
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from brain_search_client.models.nodes import Neighbor, Node, Relation
from opensearchpy import ConflictError, NotFoundError, OpenSearch

from brain_search.config import Settings
from brain_search.errors import InvalidInput, NotFound
from brain_search.store.indices import IndexNames
from brain_search.store.placement import placement_for
from brain_search.store.scope import TENANT_FIELD, TenantScope, tenant_term

NODE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
LABEL_SEGMENT_RE = re.compile(r"^[^/\x00-\x1f]{1,100}$")
MAX_DEPTH = 16
MAX_NEIGHBOR_DEPTH = 5
MAX_RELATED = 200
PAGE = 500
# Ids the API routes use as path words under /v1/nodes/.
RESERVED_IDS = frozenset({"tasks"})


def normalize_label(label: str) -> str:
    """``' aiConnected//Brain/ '`` → ``'aiConnected/Brain'``; raises InvalidInput when malformed."""
    parts = [p.strip() for p in label.strip().strip("/").split("/") if p.strip()]
    if not parts:
        raise InvalidInput("label", "a node label is a non-empty path like 'aiConnected/Brain'")
    if len(parts) > MAX_DEPTH:
        raise InvalidInput("label", f"a node path has at most {MAX_DEPTH} levels")
    for p in parts:
        if not LABEL_SEGMENT_RE.match(p):
            raise InvalidInput("label", f"bad path segment {p[:40]!r}: 1–100 characters, no control characters")
    return "/".join(parts)


def parent_of(label: str) -> str | None:
    return label.rsplit("/", 1)[0] if "/" in label else None


def ancestors_of(label: str) -> list[str]:
    """``'a/b/c'`` → ``['a', 'a/b']`` (root first)."""
    parts = label.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def in_subtree(label: str, root: str) -> bool:
    return label == root or label.startswith(root + "/")


def minimal_cover(labels: Sequence[str]) -> list[str]:
    """Drop labels already inside another one's subtree, keeping first-seen order:
    ``['a/b', 'a', 'c', 'a/x']`` → ``['a', 'c']``."""
    uniq = list(dict.fromkeys(labels))
    return [lbl for lbl in uniq if not any(o != lbl and in_subtree(lbl, o) for o in uniq)]


def derive_node_id(label: str) -> str:
    return "n_" + hashlib.sha256(label.encode()).hexdigest()[:16]


def node_doc_id(tenant_id: str, node_id: str) -> str:
    return hashlib.sha256(f"{tenant_id}\x1f{node_id}".encode()).hexdigest()[:40]


def node_doc(tenant_id: str, node: Node) -> dict[str, Any]:
    """The stored document: the node plus its tenant and the path-tokenised label."""
    return {TENANT_FIELD: tenant_id, "label_tree": node.label, **node.model_dump(mode="json")}


def _tenant(tenant_id: str, *clauses: dict[str, Any]) -> dict[str, Any]:
    return {"bool": {"filter": [tenant_term(tenant_id), *clauses]}}


class GraphStore:
    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        names = IndexNames.of(settings)
        self.index = names.nodes
        self.tasks_index = names.node_tasks
        self.placement = placement_for(client, settings)

    def memories(self, tenant_id: str) -> TenantScope:
        """The scope of ``tenant_id``'s memories: the alias they are read and written through
        (store/placement.py), looked up once per node operation."""
        return TenantScope.of(self.placement, tenant_id)

    # ---------------------------------------------------------------- reads
    def get_by_id(self, tenant_id: str, node_id: str) -> Node:
        try:
            src = self.client.get(index=self.index, id=node_doc_id(tenant_id, node_id))["_source"]
        except NotFoundError:
            raise NotFound("node", node_id) from None
        return _to_node(src)

    def get_by_label(self, tenant_id: str, label: str) -> Node:
        label = normalize_label(label)
        hits = self._search(_tenant(tenant_id, {"term": {"label": label}}), size=1)
        if not hits:
            raise NotFound("node", label)
        return hits[0]

    def get(self, tenant_id: str, ref: str) -> Node:
        """A node by id, else by label path."""
        if NODE_ID_RE.match(ref):
            try:
                return self.get_by_id(tenant_id, ref)
            except NotFound:
                pass
        try:
            return self.get_by_label(tenant_id, ref)
        except InvalidInput:
            raise NotFound("node", ref) from None

    def get_many(self, tenant_id: str, node_ids: Sequence[str]) -> list[Node]:
        """The existing nodes among these ids (missing ones are skipped), in the given order."""
        if not node_ids:
            return []
        ids = list(dict.fromkeys(node_ids))
        r = self.client.mget(index=self.index, body={"ids": [node_doc_id(tenant_id, i) for i in ids]})
        return [_to_node(d["_source"]) for d in r["docs"] if d.get("found")]

    def resolve(self, tenant_id: str, refs: Sequence[str], field: str = "nodes") -> list[Node]:
        """Nodes for ids or label paths; an unknown one is bad input naming the field."""
        out = []
        for ref in refs:
            try:
                out.append(self.get(tenant_id, ref))
            except NotFound:
                raise InvalidInput(field, f"unknown node {ref!r}") from None
        return out

    def list_nodes(
        self,
        tenant_id: str,
        prefix: str | None = None,
        subtree: str | None = None,
        limit: int = 100,
        *,
        after: str | None = None,
    ) -> list[Node]:
        """Nodes sorted by label. ``prefix`` is a plain string prefix of the label (for pickers:
        ``aiCon`` finds ``aiConnected/...``); ``subtree`` is a label path and yields that node and
        everything under it. ``after`` is the last label of the previous page."""
        clauses: list[dict[str, Any]] = []
        if prefix:
            clauses.append({"prefix": {"label": prefix.lstrip("/")}})
        if subtree:
            clauses.append({"term": {"label_tree": normalize_label(subtree)}})
        return self._search(_tenant(tenant_id, *clauses), size=limit, after=after)

    def subtree(self, tenant_id: str, label: str) -> list[Node]:
        """The node with this label and all its descendants, every page of them."""
        return list(self._scan(_tenant(tenant_id, {"term": {"label_tree": label}})))

    def children(self, tenant_id: str, labels: Sequence[str]) -> list[Node]:
        return list(self._scan(_tenant(tenant_id, {"terms": {"parent": list(labels)}}))) if labels else []

    def by_labels(self, tenant_id: str, labels: Sequence[str]) -> list[Node]:
        return list(self._scan(_tenant(tenant_id, {"terms": {"label": list(labels)}}))) if labels else []

    # ---------------------------------------------------------------- writes
    def create(self, tenant_id: str, label: str, description: str | None = None, node_id: str | None = None) -> Node:
        """Create a node and whichever of its ancestors are missing. InvalidInput when the label
        or the id is taken or malformed."""
        label = normalize_label(label)
        if node_id is not None and (not NODE_ID_RE.match(node_id) or node_id in RESERVED_IDS):
            raise InvalidInput("id", "1–128 characters: letters, digits, '_', '.', ':', '-' (not 'tasks')")
        try:
            existing = self.get_by_label(tenant_id, label)
        except NotFound:
            existing = None
        if existing:
            raise InvalidInput("label", f"a node with label {label!r} already exists (id {existing.id})")
        self.ensure_ancestors(tenant_id, label)
        return self._put_new(tenant_id, label, description, node_id)

    def ensure(self, tenant_id: str, label: str, description: str | None = None) -> Node:
        """The node with this label, created (with its ancestors) when missing (importers)."""
        try:
            return self.get_by_label(tenant_id, label)
        except NotFound:
            pass
        self.ensure_ancestors(tenant_id, normalize_label(label))
        try:
            return self._put_new(tenant_id, normalize_label(label), description, None)
        except InvalidInput:  # created concurrently
            return self.get_by_label(tenant_id, label)

    def ensure_ancestors(self, tenant_id: str, label: str) -> None:
        wanted = ancestors_of(label)
        have = {n.label for n in self.by_labels(tenant_id, wanted)}
        for anc in wanted:
            if anc not in have:
                with contextlib.suppress(InvalidInput):  # created concurrently
                    self._put_new(tenant_id, anc, None, None)

    def _put_new(self, tenant_id: str, label: str, description: str | None, node_id: str | None) -> Node:
        now = datetime.now(UTC)
        # A derived id can be taken by a node that was moved away from this label; then a random
        # suffix keeps ids unique.
        candidates = [node_id] if node_id else [derive_node_id(label), f"{derive_node_id(label)}{secrets.token_hex(3)}"]
        for cand in candidates:
            node = Node(
                id=cand,
                label=label,
                parent=parent_of(label),
                description=description,
                created_at=now,
                updated_at=now,
            )
            try:
                self.client.create(
                    index=self.index,
                    id=node_doc_id(tenant_id, node.id),
                    body=node_doc(tenant_id, node),
                    params={"refresh": "true"},
                )
                return node
            except ConflictError:
                continue
        raise InvalidInput("id", f"a node with id {candidates[0]!r} already exists")

    def set_description(self, tenant_id: str, node_id: str, description: str | None) -> Node:
        node = self.get_by_id(tenant_id, node_id)
        now = datetime.now(UTC)
        self.client.update(
            index=self.index,
            id=node_doc_id(tenant_id, node.id),
            body={"doc": {"description": description, "updated_at": now.isoformat()}},
            params={"refresh": "true", "retry_on_conflict": 3},
        )
        return node.model_copy(update={"description": description, "updated_at": now})

    def relate(self, tenant_id: str, a_ref: str, b_ref: str, add: bool = True) -> Node:
        """Add (or remove) the related edge a↔b on both nodes; idempotent. Returns node a."""
        a, b = self.get(tenant_id, a_ref), self.get(tenant_id, b_ref)
        if a.id == b.id:
            raise InvalidInput("other", "a node cannot be related to itself")
        if add and len(a.related) >= MAX_RELATED and b.id not in a.related:
            raise InvalidInput("other", f"a node has at most {MAX_RELATED} related nodes")
        now = datetime.now(UTC).isoformat()
        for x, y in ((a, b), (b, a)):
            self.client.update(
                index=self.index,
                id=node_doc_id(tenant_id, x.id),
                body=_edge_script(y.id, add, now),
                params={"refresh": "true", "retry_on_conflict": 5},
            )
        return self.get_by_id(tenant_id, a.id)

    # ---------------------------------------------------------------- traversal
    def neighbors(self, tenant_id: str, ref: str, depth: int = 1) -> tuple[Node, list[Neighbor]]:
        """Breadth-first over parent, child and related edges up to ``depth`` hops (1–5).
        Each node appears once, at its shortest distance; sorted by distance then label."""
        if not 1 <= depth <= MAX_NEIGHBOR_DEPTH:
            raise InvalidInput("depth", f"depth is 1–{MAX_NEIGHBOR_DEPTH}")
        start = self.get(tenant_id, ref)
        seen: dict[str, Node] = {start.id: start}
        found: list[Neighbor] = []
        frontier = [start]
        for dist in range(1, depth + 1):
            step: list[tuple[Node, Relation, Node]] = []
            by_label = {n.label: n for n in frontier}
            parents = self.by_labels(tenant_id, [n.parent for n in frontier if n.parent])
            for p in parents:
                step += [(p, "parent", n) for n in frontier if n.parent == p.label]
            for c in self.children(tenant_id, list(by_label)):
                step.append((c, "child", by_label[c.parent or ""]))
            rel = {r.id: r for r in self.get_many(tenant_id, [i for n in frontier for i in n.related])}
            step += [(rel[i], "related", n) for n in frontier for i in n.related if i in rel]
            frontier = []
            for node, relation, src in step:
                if node.id in seen:
                    continue
                seen[node.id] = node
                frontier.append(node)
                found.append(Neighbor(node=node, distance=dist, relation=relation, via=src.id))
            if not frontier:
                break
        found.sort(key=lambda nb: (nb.distance, nb.node.label))
        return start, found

    def related_closure(self, tenant_id: str, nodes: Sequence[Node], depth: int) -> list[Node]:
        """``nodes`` followed by the nodes reachable over related edges within ``depth`` hops."""
        seen = {n.id: n for n in nodes}
        frontier = list(nodes)
        for _ in range(depth):
            ids = [i for n in frontier for i in n.related if i not in seen]
            frontier = self.get_many(tenant_id, ids)
            seen.update((n.id, n) for n in frontier)
            if not frontier:
                break
        return list(seen.values())

    def expand_scope(self, tenant_id: str, refs: Sequence[str] | None, expand_related: int = 0) -> list[str]:
        """The label paths recall filters on for ``refs`` (node ids or label paths).

        Each returned path stands for its whole subtree (the memories' ``node_path`` filter is
        path-hierarchical). With ``expand_related`` > 0 the nodes related to the named ones, up to
        that many hops, are added. Paths already covered by another one's subtree are dropped.
        ``[]`` means no X-axis filter (no refs). Unknown refs raise InvalidInput on ``nodes``.
        """
        if not refs:
            return []
        if expand_related < 0:
            raise InvalidInput("expand_related", "must be 0 or more")
        nodes = self.resolve(tenant_id, refs)
        if expand_related:
            nodes = self.related_closure(tenant_id, nodes, expand_related)
        return minimal_cover([n.label for n in nodes])

    # ---------------------------------------------------------------- internals
    def _search(self, query: dict[str, Any], size: int, after: str | None = None) -> list[Node]:
        body: dict[str, Any] = {"query": query, "size": size, "sort": [{"label": "asc"}]}
        if after is not None:
            body["search_after"] = [after]
        r = self.client.search(index=self.index, body=body)
        return [_to_node(h["_source"]) for h in r["hits"]["hits"]]

    def _scan(self, query: dict[str, Any]) -> Iterator[Node]:
        after: str | None = None
        while True:
            page = self._search(query, size=PAGE, after=after)
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1].label


def _edge_script(other_id: str, add: bool, now: str) -> dict[str, Any]:
    if add:
        source = (
            "if (ctx._source.related == null) { ctx._source.related = []; } "
            "if (ctx._source.related.contains(params.id)) { ctx.op = 'noop'; } "
            "else { ctx._source.related.add(params.id); ctx._source.updated_at = params.now; }"
        )
    else:
        source = (
            "if (ctx._source.related == null || !ctx._source.related.contains(params.id)) { ctx.op = 'noop'; } "
            "else { ctx._source.related.removeIf(x -> x == params.id); ctx._source.updated_at = params.now; }"
        )
    return {"script": {"lang": "painless", "source": source, "params": {"id": other_id, "now": now}}}


def _to_node(src: dict[str, Any]) -> Node:
    return Node(**{k: v for k, v in src.items() if k in Node.model_fields})
