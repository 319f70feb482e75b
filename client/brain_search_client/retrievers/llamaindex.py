"""A LlamaIndex retriever over recall: ``BrainRetriever(client=BrainClient(...))`` (and
``async_client=`` for ``aretrieve``). Each ``NodeWithScore`` is a memory: a ``TextNode`` with the
memory's id and text, its metadata the scores, Z and fields; ``score`` its calibrated relevance."""

from __future__ import annotations

from typing import Any

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from brain_search_client._async.client import AsyncBrainClient
from brain_search_client._sync.client import BrainClient
from brain_search_client.models.recall import RecallResponse
from brain_search_client.retrievers import metadata


def nodes(response: RecallResponse) -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(id_=r.memory_id, text=r.content, metadata=metadata(r)), score=r.scores.relevance)
        for r in response.results
    ]


class BrainRetriever(BaseRetriever):
    """Recall as a LlamaIndex retriever; ``strict`` (default True), ``limit`` and ``options`` as
    the LangChain one's."""

    def __init__(
        self,
        client: BrainClient | None = None,
        *,
        async_client: AsyncBrainClient | None = None,
        strict: bool = True,
        limit: int = 10,
        options: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self.client = client
        self.async_client = async_client
        self.recall_options = {"strict": strict, "limit": limit, **(options or {})}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.client is None:
            raise ValueError("BrainRetriever needs client= (a BrainClient) to run synchronously")
        return nodes(self.client.recall(query_bundle.query_str, **self.recall_options))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.async_client is None:
            return self._retrieve(query_bundle)
        return nodes(await self.async_client.recall(query_bundle.query_str, **self.recall_options))
