"""The Python client of the brain-search API.

``BrainClient`` / ``AsyncBrainClient``: a tenant's (or a user's) key; ``AdminClient`` /
``AsyncAdminClient``: the admin key. One typed method per route, retries with backoff, pages
walked for you, typed errors (``brain_search_client.errors``), the API's own models
(``brain_search_client.models``). Optional retrievers: ``brain_search_client.retrievers``.
"""

from __future__ import annotations

from brain_search_client._async.admin import AsyncAdminClient
from brain_search_client._async.client import AsyncBrainClient
from brain_search_client._common import TenantPage, export_line
from brain_search_client._sync.admin import AdminClient
from brain_search_client._sync.client import BrainClient
from brain_search_client.errors import (
    ApiError,
    BrainError,
    Conflict,
    ConnectionFailed,
    Forbidden,
    InvalidRequest,
    NotFound,
    PreconditionFailed,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    WaitTimeout,
    WriteFailed,
)
from brain_search_client.retry import RetryPolicy

__version__ = "0.1.0"
__all__ = [
    "AdminClient",
    "ApiError",
    "AsyncAdminClient",
    "AsyncBrainClient",
    "BrainClient",
    "BrainError",
    "Conflict",
    "ConnectionFailed",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "PreconditionFailed",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "TenantPage",
    "Unauthorized",
    "Unavailable",
    "WaitTimeout",
    "WriteFailed",
    "export_line",
]
