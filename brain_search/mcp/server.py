"""The MCP server: the tool `brain_recall` with the spec's input schema (4.1), over stdio (tenant,
and a user when set, from settings) and streamable HTTP (tenant, and its user for a user's key,
from the caller's API key, like the HTTP API). Every tool call goes through the caller
(``tenancy/caller.py``): a session on a user's key recalls, writes and forgets that user's
memories only, whatever the model puts in the arguments (another ``user_id`` is an error)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from pydantic import ValidationError

from brain_search.errors import MESSAGE_CHARS, BrainSearchError, Unauthorized, cut
from brain_search.ingest.models import MemoryIn
from brain_search.models import RecallRequest, RecallResponse
from brain_search.tenancy.caller import Caller

TOOL_NAME = "brain_recall"

# Spec 4.1, verbatim except that "auto" is listed in the enum: the spec makes it the default.
RECALL_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Natural language query"},
        "focus": {
            "type": "string",
            "enum": ["auto", "exact", "precise", "balanced", "conceptual", "broad"],
            "default": "auto",
            "description": "Z-axis targeting preset (auto = intent detection)",
        },
        "z_value": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "Explicit Z-axis target (overrides focus)",
        },
        "nodes": {
            "type": "array",
            "items": {"type": "string"},
            "description": "X-axis filter: specific Knowledge Graph nodes",
        },
        "limit": {"type": "integer", "default": 10, "description": "Maximum results to return"},
        "tiered": {"type": "boolean", "default": False, "description": "Return results grouped by Z-tier"},
        "reference_time": {
            "type": "string",
            "description": "ISO 8601: what time words in the query ('last week', 'in January') are relative to "
            "(default now)",
        },
        "time_words": {
            "type": "boolean",
            "default": False,
            "description": "read time words in the query ('last week', 'in May 2023') as since/until",
        },
        "context": {
            "type": "integer",
            "minimum": 0,
            "maximum": 5,
            "description": "conversation context: `conversations` lists the hits' conversations, each with this many "
            "turns either side of its best hit; 0: none (default: 2 when the query asks for a conversation, "
            "'what was that conversation about ...', else none)",
        },
        "strict": {
            "type": "boolean",
            "default": True,
            "description": "only memories that match (clear the relevance floor): fewer than `limit`, or none, "
            "rather than filler a model would repeat. false: fill to `limit` (the weak ones read low relevance)",
        },
        "min_relevance": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "only results whose calibrated relevance (0–1) is at least this",
        },
        "z_formula": {
            "type": "string",
            "enum": ["calibrated", "spec"],
            "default": "calibrated",
            "description": "How Z positions are computed: by kind of match (calibrated) or the spec's "
            "semantic / (lexical + semantic)",
        },
        "user_id": {
            "type": "string",
            "description": "only this user's memories (a session on a user's key: its user, whatever is sent)",
        },
        "agent_id": {"type": "string", "description": "only this agent's memories"},
        "include_shared": {
            "type": "boolean",
            "default": False,
            "description": "with a user: also the organisation's shared memories (those with no user)",
        },
    },
    "required": ["query"],
}
TOOL_DESCRIPTION = (
    "Retrieve memories from Brain's 3D memory space. Every result has a lexical and a semantic score and "
    "a Z position (0 = exact match … 1 = broad theme); quote a phrase or say 'exactly' for exact matches, "
    "'ideas related to' or 'explore' for broad ones, or set focus / z_value. Tiers hold only memories that "
    "match, and by default (`strict`) so do the results: an empty list means nothing matched "
    "(query_analysis.nothing_matched), unless query_analysis.withheld_matches > 0: memories matched and "
    "min_relevance withheld them. 'What was that conversation about X' (or "
    "context: N) also returns `conversations`: the hits grouped by conversation, with the turns around each best hit."
)

REMEMBER_TOOL = "brain_remember"
REMEMBER_WAIT_S = 30.0  # `wait: true` returns by then, searchable or not (the answer says which)


def _memory_properties() -> dict[str, Any]:
    """A memory's given fields as JSON Schema, from the one schema (``models/memory.py``), with
    the text and the id first; nullable fields read as their plain type (leave one out instead)."""
    schema = MemoryIn.model_json_schema()
    props: dict[str, Any] = {}
    for name in ("content", "memory_id", *schema["properties"]):
        prop = dict(schema["properties"][name])
        prop.pop("title", None)
        prop.pop("default", None)
        plain = [t for t in prop.pop("anyOf", []) if t.get("type") != "null"]
        props[name] = {**(plain[0] if len(plain) == 1 else {}), **prop}
    return props


REMEMBER_OPTIONS: dict[str, Any] = {
    "create_nodes": {"type": "boolean", "default": False, "description": "create an unknown node_id path"},
    "wait": {
        "type": "boolean",
        "default": False,
        "description": "return once the memory is stored and searchable, so a recall right after finds it "
        f"(up to {REMEMBER_WAIT_S:.0f} s; implies refresh). Without it the answer is `queued` at once",
    },
    "refresh": {
        "type": "boolean",
        "default": False,
        "description": "the write's task makes the memory searchable as it ends, without waiting for it here",
    },
}


def remember_input_schema() -> dict[str, Any]:
    """``brain_remember``'s input: a memory's given fields and the write's options."""
    return {"type": "object", "properties": {**_memory_properties(), **REMEMBER_OPTIONS}, "required": ["content"]}


FORGET_TOOL = "brain_forget"
FORGET_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memory_id": {"type": "string", "description": "forget this one memory"},
        "conversation_id": {"type": "string", "description": "forget every memory of this conversation"},
        "node": {"type": "string", "description": "forget every memory under this node (id or label path)"},
        "source": {"type": "string"},
        "since": {"type": "string", "description": "ISO 8601"},
        "until": {"type": "string", "description": "ISO 8601"},
        "all": {"type": "boolean", "default": False, "description": "required to forget everything"},
        "user_id": {"type": "string", "description": "only this user's memories (a user's key: its user)"},
        "agent_id": {"type": "string", "description": "only this agent's memories"},
    },
}

FEEDBACK_TOOL = "brain_feedback"
FEEDBACK_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "recall_id": {"type": "string", "description": "the recall_id of a brain_recall answer"},
        "rating": {
            "type": "integer",
            "minimum": 1,
            "maximum": 5,
            "description": "how well the recall answered, 1 (useless) … 5 (exactly right)",
        },
        "results": {
            "type": "array",
            "description": "results judged relevant or not (by their id)",
            "items": {
                "type": "object",
                "properties": {"memory_id": {"type": "string"}, "relevant": {"type": "boolean"}},
                "required": ["memory_id", "relevant"],
            },
        },
    },
    "required": ["recall_id"],
}

RecallFn = Callable[[str, RecallRequest], RecallResponse]
CallerFn = Callable[[Any], Awaitable[Caller]]
ToolFn = Callable[[Caller, dict[str, Any]], dict[str, Any]]


def format_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(cut(str(x)) for x in err["loc"]) or "arguments"
        parts.append(f"{loc}: {cut(str(err['msg']), MESSAGE_CHARS)}")
    return cut("invalid arguments: " + "; ".join(parts), MESSAGE_CHARS)


def build_server(
    recall: RecallFn,
    caller_for_request: CallerFn,
    remember: ToolFn | None = None,
    forget: ToolFn | None = None,
    *,
    feedback: ToolFn | None = None,
) -> Server:
    """A low-level MCP server (exact schema control). ``caller_for_request`` receives the
    transport's request (None over stdio) and returns the caller (``Caller``) or raises
    Unauthorized. ``recall`` (tenant, request) answers a recall made as that caller.
    ``remember`` / ``forget`` / ``feedback`` (caller, arguments → JSON answer) add `brain_remember`,
    `brain_forget` and `brain_feedback`; they raise ``InvalidInput`` / ``ValidationError`` for bad
    arguments, ``Forbidden`` for what the caller's key may not do."""
    server: Server = Server("brain-search")
    extra: dict[str, tuple[ToolFn, str, dict[str, Any]]] = {}
    if remember is not None:
        extra[REMEMBER_TOOL] = (
            remember,
            "Store a memory in Brain (embedded and indexed by a task: `queued`). With wait: true the answer comes "
            "once it is searchable (`searchable: true`), so a recall right after finds it.",
            remember_input_schema(),
        )
    if forget is not None:
        extra[FORGET_TOOL] = (
            forget,
            "Forget one memory (memory_id) or every memory matching a conversation, node, source or time range "
            "(all: true for everything).",
            FORGET_INPUT_SCHEMA,
        )

    if feedback is not None:
        extra[FEEDBACK_TOOL] = (
            feedback,
            "Say how well a brain_recall answered: a rating 1–5 of the whole answer and/or single results "
            "marked relevant or not, by the answer's recall_id. Sent again, the rating and marks are replaced.",
            FEEDBACK_INPUT_SCHEMA,
        )

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        tools = [types.Tool(name=TOOL_NAME, description=TOOL_DESCRIPTION, inputSchema=RECALL_INPUT_SCHEMA)]
        tools += [types.Tool(name=n, description=d, inputSchema=schema) for n, (_, d, schema) in extra.items()]
        return tools

    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        if name in extra:
            fn = extra[name][0]
            caller = await caller_for_request(server.request_context.request)
            try:
                answer = await anyio.to_thread.run_sync(fn, caller, arguments or {})
            except ValidationError as exc:
                raise ValueError(format_validation_error(exc)) from None
            except BrainSearchError as exc:
                raise ValueError(cut(str(exc), MESSAGE_CHARS)) from None
            return [types.TextContent(type="text", text=json.dumps(answer))]
        if name != TOOL_NAME:
            raise ValueError(f"unknown tool {cut(name)!r}")
        try:
            req = RecallRequest.model_validate({"strict": True, **(arguments or {})})  # strict unless told
        except ValidationError as exc:
            raise ValueError(format_validation_error(exc)) from None
        caller = await caller_for_request(server.request_context.request)
        try:
            req = caller.recall(req)  # a user's key: its user's memories, whatever the arguments say
            resp = await anyio.to_thread.run_sync(recall, caller.tenant_id, req)
        except BrainSearchError as exc:
            raise ValueError(cut(str(exc), MESSAGE_CHARS)) from None
        return [types.TextContent(type="text", text=json.dumps(resp.model_dump(mode="json")))]

    return server


def static_caller(tenant_id: str | None, user_id: str | None = None) -> CallerFn:
    """The stdio server's caller: its tenant, and, when set, the one user it acts for (as a
    user's key would: it cannot be widened by a tool's arguments)."""

    async def _caller(_: Any) -> Caller:
        if not tenant_id:
            raise Unauthorized("set BRAIN_MCP_TENANT for the stdio MCP server")
        return Caller(tenant_id, user_id)

    return _caller


async def run_stdio(server: Server) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
