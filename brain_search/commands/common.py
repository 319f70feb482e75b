"""What the commands that talk to a running API share: one spelling of its flags (``--api-url`` /
``BRAIN_API_URL``, ``--api-key`` / ``BRAIN_API_KEY``; the old ``--url`` / ``--key`` are read as
them, unlisted: ``old_spelling``), the options of a memory's fields, ISO times checked before
anything is sent, and the API's face for a command: an error is one line in the CLI's words (the
flag, not the API field) and an exit code."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import typer
from rich.console import Console

from brain_search.commands.client import ApiError, ApiUnavailable, BrainClient

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


class Api:
    """The CLI's face of ``BrainClient``: errors become a one-line message and exit code 1 (2 for
    401 or a missing key)."""

    def __init__(
        self, url: str, key: str | None, what: str = "--api-key / BRAIN_API_KEY", flags: dict[str, str] | None = None
    ) -> None:
        if not key:
            console.print(f"[bold red]error:[/bold red] no key: pass {what}")
            raise typer.Exit(2)
        self.client = BrainClient(url, api_key=key)
        self.flags = flags

    def call(self, method: str, path: str, **kw: Any) -> Any:
        r = self.response(method, path, **kw)
        return r.json() if r.content else None

    def response(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """The API's answer (its headers with it), or the error as one line and an exit code."""
        from brain_search_client.models.inputs import json_problem

        problem = json_problem(kw.get("json"), max_depth=1_000_000) if kw.get("json") is not None else None
        if problem is not None:  # what no request can carry (a lone surrogate): refused here, not a traceback
            where, reason = problem
            message = in_cli_words(f"{where or 'body'}: {reason}", self.flags)
            console.print(f"[bold red]error:[/bold red] {message}", highlight=False)
            raise typer.Exit(2)
        try:
            return self.client.request(method, path, **kw)
        except ApiUnavailable as exc:
            console.print(f"[bold red]error:[/bold red] {exc}", highlight=False)
            raise typer.Exit(1) from None
        except ApiError as exc:
            console.print(
                f"[bold red]error {exc.status}:[/bold red] {in_cli_words(exc.detail, self.flags)}", highlight=False
            )
            raise typer.Exit(2 if exc.status == 401 else 1) from None

    def node_id(self, ref: str) -> str:
        """Ids go straight into the path; label paths are looked up first."""
        if "/" not in ref:
            return ref
        return str(self.call("GET", "/v1/nodes", params={"label": ref})["nodes"][0]["id"])

    def stored(self, task_id: str, timeout_s: float = 120.0) -> dict[str, Any]:
        """Wait for an ingest task to end and every memory of it to be stored (searchable when the
        write asked for ``refresh``); otherwise an error and exit code 1."""
        deadline = time.monotonic() + timeout_s
        status = self.call("GET", f"/v1/tasks/{task_id}")
        while status["state"] not in ("succeeded", "failed"):
            if time.monotonic() > deadline:
                console.print(
                    f"[bold red]error:[/bold red] task {task_id} still {status['state']} after {timeout_s:.0f} s"
                )
                raise typer.Exit(1)
            time.sleep(0.2)
            status = self.call("GET", f"/v1/tasks/{task_id}")
        if status["state"] != "succeeded" or status["indexed"] != status["submitted"]:
            reasons = "; ".join(f["reason"] for f in status.get("failures", [])) or status.get("error") or ""
            if status.get("superseded") and not reasons:
                reasons = "a later write or delete of it was accepted first"
            console.print(f"[bold red]error:[/bold red] not stored ({status['state']}): {reasons}", highlight=False)
            raise typer.Exit(1)
        return dict(status)
