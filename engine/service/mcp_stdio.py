"""`amem mcp`: the MCP server over stdio for one tenant of a store (what desktop MCP clients launch).

The SDK's stdio transport points fd 1 at stderr while it serves, so nothing the engine or a library
prints can corrupt the protocol stream; logs go to stderr.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from engine.config import Config
from engine.memory import Memory
from engine.model.tenant_name import validate_tenant
from engine.service.mcp_tools import build_server


def serve_stdio(store: Path, tenant: str, config: Config | None = None) -> None:
    """Serve until the client closes stdin; the Memory is closed (snapshot written) on the way out."""
    validate_tenant(tenant)
    with Memory(store, config or Config.from_env()) as memory:
        server = build_server(memory, lambda _ctx: tenant)
        anyio.run(server.run_stdio_async)
