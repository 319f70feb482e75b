"""CLI: `brain-search mcp` runs the MCP server over stdio (tenant from BRAIN_MCP_TENANT; held to
one user of it with BRAIN_MCP_USER_ID / --user, as a user's key is over HTTP)."""

from __future__ import annotations

import typer


def mcp(
    tenant: str = typer.Option(None, help="tenant whose memories are searched (default: BRAIN_MCP_TENANT)"),
    user: str = typer.Option(
        None, "--user", help="act for this user of the tenant only (default: BRAIN_MCP_USER_ID; none: every user)"
    ),
) -> None:
    """Serve the MCP tools `brain_recall`, `brain_remember`, `brain_forget` and `brain_feedback` over stdio. (Over HTTP
    they are served by `serve` at /mcp/.)"""
    import logging
    import os

    import anyio

    from brain_search.api.app import build_state
    from brain_search.config import load_settings
    from brain_search.mcp.server import build_server, run_stdio, static_caller
    from brain_search.mcp.tools import feedback_tool, mcp_tools
    from brain_search.models import RecallRequest, RecallResponse

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.basicConfig(level=logging.WARNING)  # stdout carries the protocol; logs go to stderr
    settings = load_settings()
    state = build_state(settings)

    def recall_fn(tenant_id: str, req: RecallRequest) -> RecallResponse:
        return state.recall(tenant_id, req)

    remember_fn, forget_fn = mcp_tools(state.ingest, settings, state.graph)
    feedback_fn = feedback_tool(state.feedback)
    caller = static_caller(tenant or settings.mcp_tenant, user or settings.mcp_user_id)
    server = build_server(recall_fn, caller, remember_fn, forget_fn, feedback=feedback_fn)
    try:
        anyio.run(run_stdio, server)
    finally:
        state.feedback.close()  # the recalls still waiting are written
