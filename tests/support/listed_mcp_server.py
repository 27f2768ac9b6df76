"""A real stdio MCP server (the official SDK's low-level Server) that lists the tools of a JSON
file and answers every call with an error: the builder only reads `tools/list`, so a test can
put any document behind a live server.

    python tests/support/listed_mcp_server.py TOOLS.json
"""

from __future__ import annotations

import json
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def server_for(tools: list[dict]) -> Server:
    listed = [types.Tool.model_validate(tool) for tool in tools]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params) -> types.CallToolResult:
        text = f"{params.name}: this test server only lists its tools"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=True
        )

    return Server("listed-tools", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(tools: list[dict]) -> None:
    server = server_for(tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve, json.loads(open(sys.argv[1], encoding="utf-8").read()))
