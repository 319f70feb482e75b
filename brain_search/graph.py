"""X-axis: knowledge-graph nodes, stored per tenant in their own index.

A node has a stable ``id`` and a ``label`` that is a path (``aiConnected/Brain/Architecture``);
its parent is derived from the path. Memories carry ``node_id`` and ``node_path`` (the label), and
recall filters by label path, which includes the whole subtree.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

from opensearchpy import NotFoundError, OpenSearch
from pydantic import BaseModel, Field

from brain_search.config import Settings
from brain_search.errors import InvalidInput, NotFound

NODE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
LABEL_SEGMENT_RE = re.compile(r"^[^/\x00-\x1f]{1,100}$")
MAX_DEPTH = 16


class Node(BaseModel):
    id: str
    label: str
    parent: str | None = Field(None, description="the parent's label path, derived from the label")
    description: str | None = None
    related: list[str] = Field(default_factory=list, description="ids of related nodes")
    created_at: datetime
    updated_at: datetime


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


def derive_node_id(label: str) -> str:
    return "n_" + hashlib.sha256(label.encode()).hexdigest()[:16]


def _doc_id(tenant_id: str, node_id: str) -> str:
    return hashlib.sha256(f"{tenant_id}\x1f{node_id}".encode()).hexdigest()[:40]


class GraphStore:
    def __init__(self, client: OpenSearch, settings: Settings) -> None:
        self.client = client
        self.index = f"{settings.index_prefix}-nodes"

    def install(self) -> None:
        if self.client.indices.exists(index=self.index):
            return
        body = {
            "settings": {
                "index": {"number_of_shards": 1, "auto_expand_replicas": "0-1"},
                "analysis": {
                    "analyzer": {"path_index": {"type": "custom", "tokenizer": "path_tok"}},
                    "tokenizer": {"path_tok": {"type": "path_hierarchy", "delimiter": "/"}},
                },
            },
            "mappings": {
                "dynamic": "strict",
                "properties": {
                    "tenant_id": {"type": "keyword"},
                    "id": {"type": "keyword"},
                    "label": {"type": "keyword"},
                    "label_tree": {"type": "text", "analyzer": "path_index", "search_analyzer": "keyword"},
                    "parent": {"type": "keyword"},
                    "description": {"type": "text"},
                    "related": {"type": "keyword"},
                    "created_at": {"type": "date"},
                    "updated_at": {"type": "date"},
                },
            },
        }
        self.client.indices.create(index=self.index, body=body, ignore=[400])

    # ---------------------------------------------------------------- reads
    def get_by_id(self, tenant_id: str, node_id: str) -> Node:
        try:
            src = self.client.get(index=self.index, id=_doc_id(tenant_id, node_id))["_source"]
        except NotFoundError:
            raise NotFound("node", node_id) from None
        return _to_node(src)

    def get_by_label(self, tenant_id: str, label: str) -> Node:
        label = normalize_label(label)
        r = self.client.search(
            index=self.index,
            body={"query": {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}, {"term": {"label": label}}]}}},
            params={"size": 1},
        )
        hits = r["hits"]["hits"]
        if not hits:
            raise NotFound("node", label)
        return _to_node(hits[0]["_source"])

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

    def resolve(self, tenant_id: str, refs: list[str], field: str = "nodes") -> list[Node]:
        """Nodes for ids or label paths; an unknown one is bad input naming the field."""
        out = []
        for ref in refs:
            try:
                out.append(self.get(tenant_id, ref))
            except NotFound:
                raise InvalidInput(field, f"unknown node {ref!r}") from None
        return out

    def expand_scope(self, tenant_id: str, refs: list[str], expand_related: int = 0) -> list[str]:
        """Label paths to filter recall by: the given nodes (each includes its subtree through the
        path filter) plus, up to ``expand_related`` hops, their related nodes."""
        nodes = self.resolve(tenant_id, refs)
        labels = {n.label for n in nodes}
        frontier = nodes
        for _ in range(expand_related):
            nxt = []
            for n in frontier:
                for rid in n.related:
                    try:
                        r = self.get_by_id(tenant_id, rid)
                    except NotFound:
                        continue
                    if r.label not in labels:
                        labels.add(r.label)
                        nxt.append(r)
            frontier = nxt
        return sorted(labels)

    # ---------------------------------------------------------------- writes
    def create(self, tenant_id: str, label: str, description: str | None = None, node_id: str | None = None) -> Node:
        label = normalize_label(label)
        if node_id is not None and not NODE_ID_RE.match(node_id):
            raise InvalidInput("id", "1–128 characters: letters, digits, '_', '.', ':', '-'")
        try:
            existing = self.get_by_label(tenant_id, label)
        except NotFound:
            existing = None
        if existing:
            raise InvalidInput("label", f"a node with label {label!r} already exists (id {existing.id})")
        now = datetime.now(UTC)
        node = Node(
            id=node_id or derive_node_id(label),
            label=label,
            parent=parent_of(label),
            description=description,
            created_at=now,
            updated_at=now,
        )
        doc = {"tenant_id": tenant_id, "label_tree": label, **node.model_dump(mode="json")}
        try:
            self.client.create(index=self.index, id=_doc_id(tenant_id, node.id), body=doc, params={"refresh": "true"})
        except Exception as exc:
            if getattr(exc, "status_code", None) == 409:
                raise InvalidInput("id", f"a node with id {node.id!r} already exists") from None
            raise
        return node

    def ensure(self, tenant_id: str, label: str, description: str | None = None) -> Node:
        """The node with this label, created when missing (importers)."""
        try:
            return self.get_by_label(tenant_id, label)
        except NotFound:
            return self.create(tenant_id, label, description)


def _to_node(src: dict[str, Any]) -> Node:
    return Node(**{k: v for k, v in src.items() if k in Node.model_fields})
