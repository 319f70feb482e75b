"""CLI: `brain-search remember "text"`: one memory, through the HTTP API (``--api-url`` /
``BRAIN_API_URL``, ``--api-key`` / ``BRAIN_API_KEY``). By default it returns once the memory is
stored and searchable; ``--no-wait`` returns once it is queued, and says so."""

from __future__ import annotations

import json
from typing import Any

import typer

from brain_search.commands.common import (
    AGENT_OPT,
    CONVERSATION_OPT,
    CREATE_NODES_OPT,
    FIELD_FLAGS,
    JSON_OPT,
    KEY_OPT,
    NODE_OPT,
    SOURCE_OPT,
    TIME_OPT,
    URL_OPT,
    USER_OPT,
    console,
    fail,
    fields,
    not_stored,
    owner,
    tenant_api,
)


def remember(
    content: str = typer.Argument(..., help="the text to remember"),
    node: str = NODE_OPT,
    when: str = TIME_OPT,
    conversation: str = CONVERSATION_OPT,
    *,
    source: str = SOURCE_OPT,
    user: str = USER_OPT,
    agent: str = AGENT_OPT,
    memory_id: str = typer.Option(None, "--id", help="your id for it (default: derived from the text, node and time)"),
    create_nodes: bool = CREATE_NODES_OPT,
    wait: bool = typer.Option(True, help="return once the memory is searchable (--no-wait: once it is queued)"),
    url: str = URL_OPT,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Remember one memory: a recall finds it as soon as this returns (unless --no-wait)."""
    api = tenant_api(url, key, {**FIELD_FLAGS, "memory_id": "--id"})
    given: dict[str, Any] = {**fields(node, when, conversation, source), **owner(user, agent)}
    if memory_id:
        given["memory_id"] = memory_id
    # waited for by the API (POST /v1/memories?wait=true): the answer comes once it is searchable
    outcome = api(lambda c: c.memories.add(content, wait=wait, timeout=120, create_nodes=create_nodes, **given))
    (stored_id,) = outcome.memory_ids
    if wait and not outcome.searchable:
        fail(not_stored(outcome), 1)
    answer = {**outcome.model_dump(mode="json"), "searchable": wait}
    if as_json:
        typer.echo(json.dumps(answer, indent=2))
    elif wait:
        console.print(f"{stored_id}: stored, searchable now", highlight=False)
    else:
        console.print(
            f"{stored_id}: queued as task {outcome.task_id}, not searchable yet "
            f"(it is once the task ends: GET /v1/tasks/{outcome.task_id})",
            highlight=False,
        )
