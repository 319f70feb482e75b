"""The mappings of the small bookkeeping indices (data only; ``indices.install_all`` creates them)."""

from __future__ import annotations

from typing import Any

TENANTS: dict[str, Any] = {
    "properties": {
        "tenant_id": {"type": "keyword"},
        "name": {"type": "keyword"},
        "created_at": {"type": "date"},
        # the erase marker (tenancy/erase.py): the id being erased, its token and when the second pass runs
        "erasing": {"type": "keyword"},
        "erase_id": {"type": "keyword"},
        "second_pass_at": {"type": "date"},
        # the tenant's own rate limit (tenancy/ratelimit.py), when it has one
        "rate_limit_per_s": {"type": "float"},
        "rate_limit_burst": {"type": "integer"},
        # how long the tenant's recalls and their feedback are kept (feedback/), when not the default
        "feedback_retention_s": {"type": "long"},
    }
}
AUDIT: dict[str, Any] = {
    "properties": {
        "at": {"type": "date"},
        "action": {"type": "keyword"},
        "tenant_id": {"type": "keyword"},
        "tenant_hash": {"type": "keyword"},
        "key_id": {"type": "keyword"},
        "actor": {"type": "keyword"},
        "detail": {"type": "object", "enabled": False},
    }
}
KEYS: dict[str, Any] = {
    "properties": {
        "key_id": {"type": "keyword"},
        "tenant_id": {"type": "keyword"},
        "label": {"type": "keyword"},
        # a key held to one user of its tenant (tenancy/caller.py), and one that only reads
        "user_id": {"type": "keyword"},
        "read_only": {"type": "boolean"},
        "revoked": {"type": "boolean"},
        "created_at": {"type": "date"},
        "revoked_at": {"type": "date"},
        "expires_at": {"type": "date"},
    }
}
PATH_ANALYSIS: dict[str, Any] = {
    "analyzer": {"path_index": {"type": "custom", "tokenizer": "path_tok"}},
    "tokenizer": {"path_tok": {"type": "path_hierarchy", "delimiter": "/"}},
}
NODES: dict[str, Any] = {
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
}
# Move / delete tasks, keyed by tenant + task id, so a tenant only ever sees its own.
NODE_TASKS: dict[str, Any] = {
    "properties": {
        "tenant_id": {"type": "keyword"},
        "task_id": {"type": "keyword"},
        "kind": {"type": "keyword"},
        "opensearch_task": {"type": "keyword"},
        "node_id": {"type": "keyword"},
        "from_label": {"type": "keyword"},
        "to_label": {"type": "keyword"},
        "created_at": {"type": "date"},
        # a forget's state and lease (ingest/forget.py): a running one past its lease is taken over
        "state": {"type": "keyword"},
        "lease_until": {"type": "date"},
        "result": {"type": "object", "enabled": False},
    },
}
DEAD_LETTERS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "tenant_id": {"type": "keyword"},
        "task_id": {"type": "keyword"},
        "memory_id": {"type": "keyword"},
        "user_id": {"type": "keyword"},
        "agent_id": {"type": "keyword"},
        "chunk_of": {"type": "keyword"},
        "reason": {"type": "text", "fields": {"raw": {"type": "keyword", "ignore_above": 512}}},
        "status": {"type": "integer"},
        "error_type": {"type": "keyword"},
        "attempts": {"type": "integer"},
        "payload": {"type": "object", "enabled": False},
        "created_at": {"type": "date"},
    },
}
INGEST_TASKS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "tenant_id": {"type": "keyword"},
        "state": {"type": "keyword"},
        "submitted": {"type": "integer"},
        "indexed": {"type": "integer"},
        "failed": {"type": "integer"},
        "superseded": {"type": "integer"},
        "attempts": {"type": "integer"},
        "failures": {"type": "object", "enabled": False},
        "error": {"type": "text", "index": False},
        "created_at": {"type": "date"},
        "updated_at": {"type": "date"},
        "expires_at": {"type": "date"},
        "memory_ids": {"type": "keyword"},
        "user_ids": {"type": "keyword"},
        "deliveries": {"type": "integer"},
        "delivery_attempt": {"type": "integer"},
        "requeued": {"type": "integer"},
        "payload": {"type": "object", "enabled": False},
    },
}

# Earlier versions of a memory (PUT / PATCH keep the one they replace), keyed by tenant + memory id
# + version; no vector (a restore re-embeds).
MEMORY_HISTORY: dict[str, Any] = {
    "properties": {
        "tenant_id": {"type": "keyword"},
        "memory_id": {"type": "keyword"},
        "user_id": {"type": "keyword"},
        "agent_id": {"type": "keyword"},
        "version": {"type": "long"},
        "replaced_by": {"type": "keyword"},
        "replaced_at": {"type": "date"},
        "memory": {"type": "object", "enabled": False},
    }
}

# What a recall returned and the feedback on it (brain_search/feedback/), one document per recall,
# keyed by tenant + recall id; no memory text (results are ids and numbers).
FEEDBACK: dict[str, Any] = {
    "properties": {
        "tenant_id": {"type": "keyword"},
        "recall_id": {"type": "keyword"},
        "user_id": {"type": "keyword"},
        "agent_id": {"type": "keyword"},
        "at": {"type": "date"},
        "expires_at": {"type": "date"},
        "query": {"type": "text", "index": False},
        "intent": {"type": "keyword"},
        "analysis": {"type": "object", "enabled": False},
        "request": {"type": "object", "enabled": False},
        "results": {"type": "object", "enabled": False},
        "memory_ids": {"type": "keyword"},
        "rating": {"type": "integer"},
        "rated_at": {"type": "date"},
        "updated_at": {"type": "date"},
        "marks": {
            "type": "nested",
            "properties": {
                "memory_id": {"type": "keyword"},
                "relevant": {"type": "boolean"},
                "tier": {"type": "keyword"},
                "rank": {"type": "integer"},
            },
        },
    }
}
