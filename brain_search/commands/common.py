"""What the commands that talk to a running API share: one spelling of its flags (``--api-url`` /
``BRAIN_API_URL``, ``--api-key`` / ``BRAIN_API_KEY``; the old ``--url`` / ``--key`` are read as
them, unlisted: ``old_spelling``), the options of a memory's fields, ISO times checked before
anything is sent, and the API's face for a command: an error is one line in the CLI's words (the
flag, not the API field) and an exit code."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, NoReturn, TypeVar

import typer
from brain_search_client import (
    AdminClient,
    ApiError,
    BrainClient,
    ConnectionFailed,
    InvalidRequest,
    WaitTimeout,
    WriteFailed,
)
from brain_search_client.models.ingest import TaskStatus
from pydantic import BaseModel
from rich.console import Console

console = Console()

DEFAULT_URL = "http://127.0.0.1:8080"
URL_OPT = typer.Option(DEFAULT_URL, "--api-url", envvar="BRAIN_API_URL", help="base URL of the API")
KEY_OPT = typer.Option(None, "--api-key", envvar="BRAIN_API_KEY", help="API key of your tenant", show_default=False)
ADMIN_OPT = typer.Option(None, "--admin-key", envvar="BRAIN_ADMIN_KEY", help="the admin key", show_default=False)
JSON_OPT = typer.Option(False, "--json", help="print the raw JSON answer")
OLD_SPELLINGS = {"url": "api-url", "key": "api-key"}


def old_spelling(token: str) -> str:
    """Click's ``token_normalize_func`` (commands/cli.py): ``--url`` and ``--key`` are read as ``--api-url``
    and ``--api-key`` on every command, without being listed in the help."""
    return OLD_SPELLINGS.get(token, token)


def _parse_time(value: str) -> tuple[datetime, bool]:
    """(the time, whether it was a date alone); a usage error naming the flag otherwise (exit 2)."""
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not an ISO 8601 time (e.g. 2026-03-02 or 2026-03-02T10:00:00Z)"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)), len(value.strip()) <= len("2026-03-02")


def iso_time(value: str | None) -> str | None:
    """An option's ISO 8601 time as ISO text: a date alone is its midnight, a time without a zone
    is UTC; anything else is a usage error naming the flag."""
    return None if value is None else _parse_time(value)[0].isoformat()


def iso_until(value: str | None) -> str | None:
    """Like ``iso_time``, but a date alone is the end of that day: ``--until 2026-01-12`` keeps
    what happened on the 12th."""
    if value is None:
        return None
    when, date_only = _parse_time(value)
    return (when + timedelta(days=1, microseconds=-1) if date_only else when).isoformat()


NODE_OPT = typer.Option(None, "--node", help="node id or label path")
TIME_OPT = typer.Option(
    None, "--time", callback=iso_time, help="when it happened (ISO 8601, e.g. 2026-03-02T10:00:00Z)"
)
CONVERSATION_OPT = typer.Option(None, "--conversation", help="conversation id")
SOURCE_OPT = typer.Option(None, "--source", help="where it comes from (e.g. chat, notes)")
CREATE_NODES_OPT = typer.Option(False, "--create-nodes", help="create the --node path if it does not exist")
USER_OPT = typer.Option(
    None, "--user", help="the user inside your organisation (a user's key: its own; default: every user)"
)
AGENT_OPT = typer.Option(None, "--agent", help="the agent (optional)")
SHARED_OPT = typer.Option(
    False, "--include-shared", help="with --user: also the organisation's shared memories (those with no user)"
)
OWNER_FLAGS = {"user_id": "--user", "agent_id": "--agent", "include_shared": "--include-shared"}


def owner(user: str | None, agent: str | None, include_shared: bool = False) -> dict[str, Any]:
    """The query parameters or body fields of a user scope the options name (the others left out)."""
    named: dict[str, Any] = {"user_id": user, "agent_id": agent, "include_shared": include_shared or None}
    return {k: v for k, v in named.items() if v is not None}


# the API's words for an option, and the CLI's for the same thing
CLI_WORDS = (
    (re.compile(r"send `create_nodes: true`"), "pass --create-nodes"),
    (re.compile(r"(^|; )all: (.*?)send `all: true`"), r"\1\2pass --all"),  # forget without a filter
)
# a memory's fields and the options that set them (`remember`, `memories update` / `patch`)
FIELD_FLAGS = {
    "node_id": "--node",
    "timestamp": "--time",
    "conversation_id": "--conversation",
    "source": "--source",
    "user_id": "--user",
    "agent_id": "--agent",
}


def in_cli_words(message: str, flags: dict[str, str] | None = None) -> str:
    """An API message as a CLI user reads it: the flag instead of the request field (``flags``:
    field → option of the command that sent it)."""
    for pattern, words in CLI_WORDS:
        message = pattern.sub(words, message)
    for field, flag in (flags or {}).items():
        message = re.sub(rf"(^|; )(?:memories\.0\.)?{field}: ", rf"\g<1>{flag}: ", message)
    return message


def fields(node: str | None, when: str | None, conversation: str | None, source: str | None) -> dict[str, Any]:
    """A memory's fields the options name (the others are left out)."""
    named = {"node_id": node, "timestamp": when, "conversation_id": conversation, "source": source}
    return {k: v for k, v in named.items() if v is not None}


C = TypeVar("C", BrainClient, AdminClient)
T = TypeVar("T")
CLI_RETRIES = 2
"""a command tries a call twice more after a 429, a 502/503/504 or a lost connection"""


class Api(Generic[C]):
    """The CLI's face of the client (``brain_search_client``): ``api(lambda c: c.memories.get(id))``
    makes the call; an error becomes a one-line message in the CLI's words and an exit code (2 for
    a 401, a missing key or a value refused before sending; 1 otherwise)."""

    def __init__(self, client: C, flags: dict[str, str] | None = None) -> None:
        self.client: C = client
        self.flags = flags

    def __call__(self, call: Callable[[C], T]) -> T:
        try:
            return call(self.client)
        except ConnectionFailed as exc:
            fail(str(exc), 1)
        except InvalidRequest as exc:
            if exc.status is None:  # refused here, before anything was sent
                fail(in_cli_words(exc.detail, self.flags), 2)
            fail(in_cli_words(exc.detail, self.flags), 1, exc.status)
        except ApiError as exc:
            fail(in_cli_words(exc.detail, self.flags), 2 if exc.status == 401 else 1, exc.status)
        except (WriteFailed, WaitTimeout) as exc:
            fail(str(exc), 1)


def fail(message: str, code: int, status: int | None = None) -> NoReturn:
    label = f"error {status}:" if status is not None else "error:"
    console.print(f"[bold red]{label}[/bold red] {message}", highlight=False)
    raise typer.Exit(code)


def _need(key: str | None, what: str) -> str:
    if not key:
        console.print(f"[bold red]error:[/bold red] no key: pass {what}")
        raise typer.Exit(2)
    return key


def tenant_api(url: str, key: str | None, flags: dict[str, str] | None = None) -> Api[BrainClient]:
    """The API as the tenant (or user) of ``key``; no key: a usage error (exit 2)."""
    key = _need(key, "--api-key / BRAIN_API_KEY")
    return Api(BrainClient(url, api_key=key, max_retries=CLI_RETRIES), flags)


def admin_api(url: str, admin_key: str | None) -> Api[AdminClient]:
    """The admin routes with ``admin_key``; no key: a usage error (exit 2)."""
    key = _need(admin_key, "--admin-key / BRAIN_ADMIN_KEY")
    return Api(AdminClient(url, admin_key=key, max_retries=CLI_RETRIES))


def printed(model: BaseModel | list[Any] | dict[str, Any] | None) -> str:
    """An answer as ``--json`` prints it."""
    if isinstance(model, BaseModel):
        return json.dumps(model.model_dump(mode="json"), indent=2)
    if isinstance(model, list):
        return json.dumps([m.model_dump(mode="json") if isinstance(m, BaseModel) else m for m in model], indent=2)
    return json.dumps(model, indent=2)


def not_stored(status: TaskStatus) -> str:
    """Why a write that ended did not store its memory, in the CLI's words."""
    reasons = "; ".join(f.reason for f in status.failures) or status.error or ""
    if status.superseded and not reasons:
        reasons = "a later write or delete of it was accepted first"
    return f"not stored ({status.state.value}): {reasons}"
