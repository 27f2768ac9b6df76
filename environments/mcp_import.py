"""Import a theme from a live MCP server: connect (stdio command or URL) and read `tools/list`.

The theme dict is what theme collection stores for source_kind "mcp_spec":
{"name", "source_kind": "mcp_spec", "raw_spec": {"server": {...}, "tools": [...]},
 "provenance": {...}}. Tools are kept in MCP wire form (name, description, inputSchema, ...).
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
import tempfile
from collections.abc import Sequence
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

STDERR_TAIL = 400  # characters of a stdio server's own error output kept in the message


class MCPImportError(RuntimeError):
    """The MCP server could not be reached or did not list its tools."""


def import_mcp_server(
    server: str | Sequence[str],
    *,
    name: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Connect to an MCP server and return its tools as a theme dict.

    server: an http(s) URL (streamable HTTP), or a stdio command (a list, or a shell-like string).
    """
    return anyio.run(_import, server, name, env, timeout)


async def _import(
    server: str | Sequence[str], name: str | None, env: dict[str, str] | None, timeout: float
) -> dict[str, Any]:
    is_url = isinstance(server, str) and server.startswith(("http://", "https://"))
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
        if is_url:
            target: Any = server
            source = {"transport": "streamable_http", "url": server}
        else:
            command = shlex.split(server) if isinstance(server, str) else list(server)
            if not command:
                raise MCPImportError("empty stdio command")
            params = StdioServerParameters(command=command[0], args=command[1:], env=env)
            target = stdio_client(params, errlog=errlog)  # its complaints, for the message
            source = {"transport": "stdio", "command": command}
        try:
            with anyio.fail_after(timeout):
                async with Client(target) as client:
                    tools = await _all_tools(client)
                    info = client.server_info
                    protocol_version = client.protocol_version
                    instructions = client.instructions
        except TimeoutError as exc:
            raise MCPImportError(
                f"MCP server {source} did not answer within {timeout:g} s{_said(errlog)}"
            ) from exc
        except Exception as exc:  # noqa: BLE001 - any transport or protocol failure
            raise MCPImportError(
                f"could not list tools of MCP server {source}: {_cause(exc)}{_said(errlog)}"
            ) from exc

    server_info = info.model_dump(mode="json", by_alias=True, exclude_none=True) if info else {}
    theme_name = name or server_info.get("name") or _name_from(source)
    return {
        "name": theme_name,
        "source_kind": "mcp_spec",
        "raw_spec": {
            "server": {
                **server_info,
                "protocolVersion": protocol_version,
                "instructions": instructions,
            },
            "tools": tools,
        },
        "provenance": {
            **source,
            "method": "tools/list",
            "retrieved_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "tool_count": len(tools),
        },
    }


async def _all_tools(client: Client) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return tools


def _name_from(source: dict[str, Any]) -> str:
    raw = source.get("url") or " ".join(source.get("command", []))
    return re.sub(r"[^a-z0-9]+", "_", raw.lower()).strip("_")[:60] or "mcp_server"


def _cause(exc: BaseException) -> str:
    """The failure itself, not the task group that carried it ("unhandled errors in a
    TaskGroup (1 sub-exception)" says nothing)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _said(errlog: Any) -> str:
    """What the server wrote to its error output before it failed, the last of it."""
    try:
        errlog.flush()
        errlog.seek(0)
        said = " ".join(errlog.read().split())
    except (OSError, ValueError):
        return ""
    if not said:
        return ""
    return f"; the server said: {said[-STDERR_TAIL:]}"
