"""Which tenant needs which encoder: the encoder a tenant's memories are encoded with, and how many
of them read as another language than English (a sample), with a recommendation. An admin read
(``GET /v1/admin/tenants/{id}/languages``), not a stage of a recall.

An English-only encoder (all-MiniLM-L6-v2, bge-small-en-v1.5) finds a memory in another language
by its words alone: on the multilingual set a question in one language finds the memory that
answers it in another with R@5 0.312 on MiniLM against 1.000 on multilingual-e5-small. e5 costs
a little on English alone (LoCoMo test R@10 0.697 against MiniLM's 0.711, about 1.4 points). So a
move pays once the memories in other languages are more than that cost: ``RECOMMEND_SHARE``
(10 %) of the sample, a share at which the memories found by words only outweigh the English
loss several times over. The sample is a fixed one (a seeded random score), so the same stored
memories give the same answer.
"""

from __future__ import annotations

from typing import Any

from brain_search_client.models.admin import TenantLanguages
from opensearchpy import OpenSearch

from brain_search.encoders.base import E5_SMALL, encoder_info, recorded_encoder
from brain_search.retrieval.intent.detect import reads_as_english
from brain_search.store.placement import placement_for
from brain_search.store.scope import TenantScope

RECOMMEND_SHARE = 0.10
SAMPLE = 200
MIN_SAMPLE = 20
"""fewer memories than this: too few to recommend a move"""


def other_language_share(texts: list[str]) -> tuple[int, int]:
    """(texts, those that do not read as English) (pure)."""
    return len(texts), sum(not reads_as_english(t) for t in texts)


def advice(tenant_id: str, encoder: str, sampled: int, other: int) -> tuple[str | None, str]:
    """(the command to run, or None; why) (pure)."""
    multilingual = encoder == E5_SMALL.name
    share = other / sampled if sampled else 0.0
    if multilingual:
        return None, f"already on {encoder} ({share:.0%} of the sample in other languages)"
    if sampled < MIN_SAMPLE:
        return None, f"{sampled} memories: too few to tell"
    if share < RECOMMEND_SHARE:
        return None, f"{share:.0%} in other languages, under the {RECOMMEND_SHARE:.0%} at which a move pays"
    command = f"brain-search tenant-index {tenant_id} --encoder {E5_SMALL.name}"
    return command, (
        f"{share:.0%} of its memories read as another language: {encoder} finds those by their words only, "
        f"{E5_SMALL.name} by their meaning, across languages"
    )


def tenant_languages(client: OpenSearch, settings: Any, tenant_id: str, sample: int = SAMPLE) -> TenantLanguages:
    """The tenant's encoder and the language mix of a fixed sample of its memories (two requests)."""
    placement = placement_for(client, settings)
    scope = TenantScope.of(placement, tenant_id)
    alias = scope.index
    mapping = client.indices.get_mapping(index=alias)
    encoder = str(recorded_encoder(next(iter(mapping.values()))["mappings"].get("_meta"))["name"])
    body = {
        "size": sample,
        "_source": ["content"],
        "query": {
            "function_score": {
                "query": {"bool": {"filter": scope.memories()}},
                "random_score": {"seed": 66, "field": "_seq_no"},
                "boost_mode": "replace",
            }
        },
    }
    hits = client.search(index=alias, body=body, params=scope.params())["hits"]["hits"]
    sampled, other = other_language_share([str(h["_source"].get("content") or "") for h in hits])
    recommend, reason = advice(tenant_id, encoder, sampled, other)
    return TenantLanguages(
        tenant_id=tenant_id,
        encoder=encoder,
        encoder_languages=encoder_info(encoder).languages,
        own_index=alias != placement.shared,
        sampled=sampled,
        other_language=other,
        share=round(other / sampled, 4) if sampled else 0.0,
        recommend=recommend,
        reason=reason,
    )
