"""Tool calls for the MCP tests, over any transport: a result that must succeed, or an error that must not."""

from __future__ import annotations

from typing import Any

from mcp import ClientSession


async def call(session: ClientSession, tool: str, **args: Any) -> Any:
    result = await session.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content


async def error(session: ClientSession, tool: str, **args: Any) -> str:
    result = await session.call_tool(tool, args)
    assert result.is_error, result.structured_content
    return str(result.content[0].text)  # type: ignore[union-attr]
