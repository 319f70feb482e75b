"""What an ``_msearch`` sub-response says about the shards that answered it (pure)."""

from __future__ import annotations

import json
from typing import Any

from brain_search.errors import StoreUnavailable
from brain_search.models import PartialResults


def shortfall(response: dict[str, Any]) -> PartialResults | None:
    """What one ``_msearch`` sub-response is missing (None when every shard answered). A shard
    with no live copy (a lost primary without a replica) is counted neither failed nor
    successful, only missing from ``successful``: both are checked."""
    shards = response.get("_shards") or {}
    total = int(shards.get("total", 0))
    answered = int(shards.get("successful", 0)) + int(shards.get("skipped", 0))
    failed = int(shards.get("failed", 0))
    if failed or answered < total:
        reasons = "; ".join(
            str((f.get("reason") or {}).get("reason", f.get("reason")))[:120] for f in shards.get("failures", [])[:3]
        )
        why = f"{total - answered} of {total} shards did not answer" + (f" ({reasons})" if reasons else "")
        return PartialResults(shards_total=total, shards_answered=answered, reason=why)
    if response.get("timed_out"):
        return PartialResults(shards_total=total, shards_answered=answered, reason="the search timed out")
    return None


def complete(response: dict[str, Any], allow_partial: bool = False) -> tuple[dict[str, Any], PartialResults | None]:
    """One ``_msearch`` sub-response, checked: a failed sub-search is a ``StoreUnavailable`` (a
    503 naming the reason); so is a partial one (shards that failed or did not answer, a timed-out
    search) unless ``allow_partial``, when it comes back marked. Never a silent 200 with fewer hits."""
    if "error" in response:
        raise StoreUnavailable(f"sub-search failed: {json.dumps(response['error'])[:300]}")
    missing = shortfall(response)
    if missing is not None and not allow_partial:
        raise StoreUnavailable(f"partial results: {missing.reason} (send allow_partial to accept them)")
    return response, missing
