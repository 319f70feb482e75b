"""OpenSearch request bodies of the feedback index (pure builders)."""

from __future__ import annotations

from typing import Any

from brain_search.store.scope import UserScope, owned, tenant_term

# forgetting memories: they and their stored pieces (``<id>#<n>``) leave the results and the
# marks of every record that showed them
SCRUB_SCRIPT = """
boolean gone(def id, def ids, def prefixes) {
  if (ids.contains(id)) { return true; }
  for (def p : prefixes) { if (id.startsWith(p)) { return true; } }
  return false;
}
def ids = new HashSet(params.ids);
def pre = params.prefixes;
ctx._source.memory_ids.removeIf(x -> gone(x, ids, pre));
ctx._source.results.removeIf(r -> gone(r.get('id'), ids, pre));
if (ctx._source.marks != null) { ctx._source.marks.removeIf(m -> gone(m.get('memory_id'), ids, pre)); }
"""


def live(tenant_id: str, scope: UserScope | None = None) -> list[dict[str, Any]]:
    """The tenant's records still kept (an expired one is gone for every reader, purged or not),
    of the recalls made for ``scope``'s user."""
    return [*owned(tenant_id, scope), {"range": {"expires_at": {"gt": "now"}}}]


def window(tenant_id: str, days: int, scope: UserScope | None = None) -> dict[str, Any]:
    return {"bool": {"filter": [*live(tenant_id, scope), {"range": {"at": {"gte": f"now-{days}d"}}}]}}


def summary_body(tenant_id: str, days: int, scope: UserScope | None = None) -> dict[str, Any]:
    """One search, no hits: the count, the ratings (sum and sum of squares: the interval), marks by
    tier and by intent (nested), and ratings by intent."""
    relevant = {"filter": {"term": {"marks.relevant": True}}}
    rating = {"extended_stats": {"field": "rating"}}
    return {
        "size": 0,
        "track_total_hits": True,
        "query": window(tenant_id, days, scope),
        "aggs": {
            "kept": {"value_count": {"field": "recall_id"}},
            "rating": rating,
            "distribution": {"terms": {"field": "rating", "size": 5}},
            "marks": {
                "nested": {"path": "marks"},
                "aggs": {
                    "relevant": relevant,
                    "by_tier": {"terms": {"field": "marks.tier", "size": 8}, "aggs": {"relevant": relevant}},
                },
            },
            "by_intent": {
                "terms": {"field": "intent", "size": 8},
                "aggs": {"rating": rating, "marks": {"nested": {"path": "marks"}, "aggs": {"relevant": relevant}}},
            },
        },
    }


def worst_body(tenant_id: str, days: int, size: int, scope: UserScope | None = None) -> dict[str, Any]:
    """The lowest ratings of the window, newest first among equals."""
    query = window(tenant_id, days, scope)
    query["bool"]["filter"].append({"exists": {"field": "rating"}})
    return {
        "size": size,
        "query": query,
        "sort": [{"rating": "asc"}, {"at": "desc"}],
        "_source": ["recall_id", "query", "rating", "intent", "at"],
    }


def scrub_body(tenant_id: str, memory_ids: list[str]) -> dict[str, Any]:
    """Every record of the tenant that showed one of ``memory_ids`` or a piece of one loses them."""
    prefixes = [f"{m}#" for m in memory_ids]
    showed = [{"terms": {"memory_ids": memory_ids}}, *({"prefix": {"memory_ids": p}} for p in prefixes)]
    return {
        "query": {
            "bool": {
                "filter": [tenant_term(tenant_id)],
                "should": showed,
                "minimum_should_match": 1,
            }
        },
        "script": {"lang": "painless", "source": SCRUB_SCRIPT, "params": {"ids": memory_ids, "prefixes": prefixes}},
    }


def judged_body(tenant_id: str, size: int, after: list[Any] | None = None) -> dict[str, Any]:
    """The tenant's kept records with marks (the lab's labelled set), a page at a time."""
    body: dict[str, Any] = {
        "size": size,
        "query": {"bool": {"filter": [*live(tenant_id), {"nested": {"path": "marks", "query": {"match_all": {}}}}]}},
        "sort": [{"recall_id": "asc"}],
        "_source": ["recall_id", "query", "request", "intent", "results", "marks", "rating", "at"],
    }
    if after:
        body["search_after"] = after
    return body
