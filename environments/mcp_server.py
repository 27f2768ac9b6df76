"""Serve an environment package as a real MCP server (official `mcp` SDK, low-level Server).

One isolated episode per MCP session: the first tool call of a session starts its episode, so a
write in one session is never seen in another. Tool calls go through the sandbox pool.

What "session" means depends on the transport and the protocol era:
- stdio: the server process serves one client, so one episode for the whole connection;
- streamable HTTP, session-based era (initialize handshake, `Mcp-Session-Id`): one episode per
  session id;
- streamable HTTP, stateless 2026 era (no session): a client names its episode with
  `_meta["agent-world/episode"]` on each call; a call without it runs in a fresh episode that
  ends with the call (reads work, writes do not persist).

    python -m environments.mcp_server <package_path>            # stdio
    python -m environments.mcp_server <package_path> --http 8000 # streamable HTTP at /mcp
"""

from __future__ import annotations

import argparse
import json
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from starlette.applications import Starlette

from environments.package import EnvironmentPackage, load_package
from environments.runtime import Episode, SandboxPool

EPISODE_META_KEY = "agent-world/episode"


class SessionEpisodes:
    """The episode of each MCP session, started on the session's first tool call.

    At most `max_episodes` live at once; the least recently used one is closed beyond that.
    """

    def __init__(self, package: EnvironmentPackage, pool: SandboxPool, max_episodes: int = 256):
        self.package = package
        self.pool = pool
        self.max_episodes = max_episodes
        self._episodes: OrderedDict[str, Episode] = OrderedDict()
        self._lock = threading.Lock()

    def call_tool(self, session_key: str | None, name: str, arguments: dict[str, Any]):
        """Run one call in the session's episode (a one-call episode when there is no session)."""
        if session_key is None:
            with self.pool.start_episode(self.package) as episode:
                return episode.call_tool(name, arguments)
        return self._episode(session_key).call_tool(name, arguments)

    def _episode(self, session_key: str) -> Episode:
        with self._lock:
            episode = self._episodes.get(session_key)
            if episode is None:
                episode = self._episodes[session_key] = self.pool.start_episode(self.package)
                while len(self._episodes) > self.max_episodes:
                    self._episodes.popitem(last=False)[1].close()
            self._episodes.move_to_end(session_key)
            return episode

    def close(self) -> None:
        with self._lock:
            for episode in self._episodes.values():
                episode.close()
            self._episodes.clear()


def build_server(package: EnvironmentPackage, workers: int = 1) -> Server:
    """A low-level MCP Server whose lifespan owns the sandbox pool of this package."""
    tools = [
        types.Tool(
            name=tool["function"]["name"],
            description=tool["function"].get("description"),
            input_schema=tool["function"]["parameters"],
        )
        for tool in package.tools
    ]

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
        pool = await anyio.to_thread.run_sync(lambda: SandboxPool(workers=workers))
        episodes = SessionEpisodes(package, pool)
        try:
            yield {"episodes": episodes}
        finally:
            episodes.close()
            pool.close()

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        episodes: SessionEpisodes = ctx.lifespan_context["episodes"]
        result = await anyio.to_thread.run_sync(
            episodes.call_tool, session_key(ctx), params.name, params.arguments or {}
        )
        if result.ok:
            text = json.dumps(result.result, ensure_ascii=False)
            structured = (
                result.result if isinstance(result.result, dict) else {"result": result.result}
            )
            return types.CallToolResult(
                content=[types.TextContent(text=text)], structured_content=structured
            )
        return types.CallToolResult(
            content=[types.TextContent(text=f"{result.error_kind}: {result.error}")],
            is_error=True,
        )

    server = Server(
        package.name,
        version=str(package.version),
        title=package.manifest.get("title"),
        description=package.manifest.get("description"),
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


def session_key(ctx: ServerRequestContext) -> str | None:
    """Which episode a request belongs to (see the module docstring); None: a one-call episode."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return "stdio"
    if headers.get("mcp-session-id"):
        return "session:" + headers["mcp-session-id"]
    named = (ctx.meta or {}).get(EPISODE_META_KEY)
    return f"named:{named}" if isinstance(named, str) and named else None


async def serve_stdio(package_path: str) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(load_package(package_path))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(package_path: str) -> None:
    """Serve the package over stdio until the client closes the connection."""
    anyio.run(serve_stdio, package_path)


def build_http_app(package_path: str, workers: int = 1, host: str = "127.0.0.1") -> Starlette:
    """An ASGI app serving the package over streamable HTTP at /mcp."""
    server = build_server(load_package(package_path), workers=workers)
    return server.streamable_http_app(host=host)


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve an environment package over MCP")
    parser.add_argument("package_path")
    parser.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP on this port")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    if args.http is None:
        run_stdio(args.package_path)
        return
    import uvicorn

    uvicorn.run(build_http_app(args.package_path, host=args.host), host=args.host, port=args.http)


if __name__ == "__main__":
    main()
