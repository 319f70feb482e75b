"""A LangChain retriever over recall: ``BrainRetriever(client=BrainClient(...))``, and
``async_client=AsyncBrainClient(...)`` for ``ainvoke`` without a thread. Each ``Document`` is a
memory: ``page_content`` its text, ``id`` its memory id, ``metadata`` its scores, Z and fields."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from brain_search_client._async.client import AsyncBrainClient
from brain_search_client._sync.client import BrainClient
from brain_search_client.models.recall import RecallResponse
from brain_search_client.retrievers import metadata


def documents(response: RecallResponse) -> list[Document]:
    return [Document(page_content=r.content, id=r.memory_id, metadata=metadata(r)) for r in response.results]


class BrainRetriever(BaseRetriever):
    """Recall as a LangChain retriever. ``strict`` (default True): only memories that clear the
    relevance floor; ``limit``: at most this many; ``options``: any other recall option
    (``focus``, ``nodes``, ``user_id``, ``since`` …)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: BrainClient | None = None
    async_client: AsyncBrainClient | None = None
    strict: bool = True
    limit: int = 10
    options: dict[str, Any] = Field(default_factory=dict)

    def _recall_options(self) -> dict[str, Any]:
        return {"strict": self.strict, "limit": self.limit, **self.options}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self.client is None:
            raise ValueError("BrainRetriever needs client= (a BrainClient) to run synchronously")
        return documents(self.client.recall(query, **self._recall_options()))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return documents(await self.async_client.recall(query, **self._recall_options()))
