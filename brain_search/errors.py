"""The error hierarchy of brain-search. Mapped to HTTP / MCP / CLI errors in one place each.

BrainSearchError
├── InvalidInput          bad request data: a field and a reason (HTTP 422)
├── NotFound              an object that does not exist for this tenant (HTTP 404)
├── Conflict              the request is valid but the current state refuses it (HTTP 409)
├── PreconditionFailed    If-Match names a version that is no longer the stored one (HTTP 412)
├── Unauthorized          missing, unknown or revoked key (HTTP 401)
├── Forbidden             a valid key asking past what it may: another user, a write on a read-only key (HTTP 403)
├── StoreUnavailable      OpenSearch cannot be reached or answered with a server error (HTTP 503)
└── SetupError            the local stack cannot be obtained or started (CLI message, exit 1)
"""

from __future__ import annotations

ECHO_CHARS = 200  # what an error answer echoes of a client's input, at most (a prefix)
MESSAGE_CHARS = 500  # an error message, at most (one that quotes the input)


def cut(text: str, limit: int = ECHO_CHARS) -> str:
    """``text``, or its first ``limit`` characters and how long it was: an error answer never
    echoes a client's megabyte back (HTTP 422s, MCP errors, CLI messages)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


class BrainSearchError(Exception):
    """Base of every error this package raises on purpose."""


class InvalidInput(BrainSearchError):
    """Bad input naming its ``field``; ``where``: the part of the request that holds it (``body``,
    or ``query`` for a query parameter), as a 422's ``loc`` starts."""

    def __init__(self, field: str, reason: str, where: str = "body") -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason
        self.where = where


class NotFound(BrainSearchError):
    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"{kind} {ident!r} not found")
        self.kind = kind
        self.ident = ident


class Conflict(BrainSearchError):
    """Valid input that the current state refuses (a node that still holds memories, a duplicate)."""

    def __init__(self, reason: str, **details: object) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details


class PreconditionFailed(BrainSearchError):
    def __init__(self, expected: str, actual: int | None) -> None:
        super().__init__(f"If-Match {expected} is not the stored version ({actual})")
        self.expected = expected
        self.actual = actual


class Unauthorized(BrainSearchError):
    pass


class Forbidden(BrainSearchError):
    """A valid key that may not do this: a key held to one user naming another user, or a
    read-only key writing. ``field``: the request field that asked for it."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class RateLimited(BrainSearchError):
    """The caller's key has used its request budget: 429, again after ``retry_after_s``."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"rate limit of this API key reached; retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s


class StoreUnavailable(BrainSearchError):
    pass


class SetupError(BrainSearchError):
    """Raised with a human-readable reason and, where there is one, the tail of a log."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
        super().__init__(reason if not log_tail else f"{reason}\n--- last lines of the log ---\n{log_tail}")
        self.reason = reason
        self.log_tail = log_tail
