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

A server bound to a task (`build_server(..., task=spec)`, `manage.py serve_mcp ENV --task ID`)
carries the task instruction as its instructions and lists the task's own tools
(`tasks.tool_subset.offered_tools`: its gold tools and distractors, every tool for a task with
no subset) and `submit_answer` (input schema from the task's answer contract); a call to any
other tool is an `unknown_tool` error, recorded in the session's run, never run in the sandbox. A valid `submit_answer` ends the session's
episode through `finish_episode` and `tasks.reward.score` and returns the reward breakdown; the
session's next call starts a fresh episode. A malformed one is an `invalid_arguments` error and
the episode goes on.

    python -m serving.mcp_server <package_path>            # stdio
    python -m serving.mcp_server <package_path> --http 8000 # streamable HTTP at /mcp
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
from environments.runtime import Episode, SandboxPool, ToolCallResult
from environments.tool_names import mcp_names
from serving.episode_scoring import TaskRun
from tasks.answer_contract import SUBMIT_ANSWER, task_contract
from tasks.synthesis.task_spec import as_task
from tasks.tool_subset import not_offered_message, offered_names

EPISODE_META_KEY = "agent-world/episode"


class SessionEpisodes:
    """The episode of each MCP session, started on the session's first tool call.

    At most `max_episodes` live at once; the least recently used one is closed beyond that.
    With a `task`, each episode also keeps a `TaskRun` (its calls), and `submit` ends it.
    """

    def __init__(
        self,
        package: EnvironmentPackage,
        pool: SandboxPool,
        max_episodes: int = 256,
        task: Any = None,
    ):
        self.package = package
        self.pool = pool
        self.max_episodes = max_episodes
        self.task = task
        self._episodes: OrderedDict[str, Episode] = OrderedDict()
        self._runs: dict[str, Any] = {}  # session key -> TaskRun, for a task-bound server
        self._lock = threading.Lock()

    def call_tool(self, session_key: str | None, name: str, arguments: dict[str, Any]):
        """Run one call in the session's episode (a one-call episode when there is no session);
        on a task-bound server, a tool the task does not offer is refused, not run."""
        refusal = self._refusal(name)
        if refusal is not None and session_key is None:
            return ToolCallResult(name, arguments, False, None, refusal, "unknown_tool")
        if session_key is None:
            with self.pool.start_episode(self.package) as episode:
                return episode.call_tool(name, arguments)
        episode, run = self._episode(session_key)
        if refusal is not None:
            result = ToolCallResult(name, arguments, False, None, refusal, "unknown_tool")
        else:
            result = episode.call_tool(name, arguments)
        if run is not None:
            run.calls.append(result.to_dict())
        return result

    def _refusal(self, name: str) -> str | None:
        if self.task is None:
            return None
        if name in offered_names(self.task, self.package.tools):
            return None
        return not_offered_message(name)

    def submit(self, session_key: str | None, arguments: dict[str, Any]):
        """A `submit_answer` call: (None, problem) when malformed (the episode goes on), else
        (reward breakdown, None) with the session's episode scored and closed."""
        if session_key is None:  # no session: an episode with no calls in it
            run = TaskRun(self.task)
            submission = run.submit(arguments)
            if not submission.valid:
                return None, submission.problem
            with self.pool.start_episode(self.package) as episode:
                return run.finish(episode)[1], None
        episode, run = self._episode(session_key)
        submission = run.submit(arguments)
        if not submission.valid:
            return None, submission.problem
        try:
            breakdown = run.finish(episode)[1]
        finally:
            self._end(session_key, episode)
        return breakdown, None

    def _episode(self, session_key: str) -> tuple[Episode, Any]:
        with self._lock:
            episode = self._episodes.get(session_key)
            if episode is None:
                episode = self._episodes[session_key] = self.pool.start_episode(self.package)
                if self.task is not None:
                    self._runs[session_key] = TaskRun(self.task)
                while len(self._episodes) > self.max_episodes:
                    oldest, dropped = self._episodes.popitem(last=False)
                    self._runs.pop(oldest, None)
                    dropped.close()
            self._episodes.move_to_end(session_key)
            return episode, self._runs.get(session_key)

    def _end(self, session_key: str, episode: Episode) -> None:
        """Close the session's episode; its next call starts a fresh one."""
        with self._lock:
            if self._episodes.get(session_key) is episode:
                del self._episodes[session_key]
                self._runs.pop(session_key, None)
        episode.close()

    def close(self) -> None:
        with self._lock:
            for episode in self._episodes.values():
                episode.close()
            self._episodes.clear()
            self._runs.clear()


def task_instructions(task: Any) -> str:
    """What a task-bound server tells its client: the instruction and how to end the task.
    Never the reference answer, the expected state or the gold chain."""
    task = as_task(task)
    contract = task_contract(task)
    shape = contract.describe()
    how = (
        f"Use the tools, then call {SUBMIT_ANSWER} once: it ends the episode and returns the "
        "reward (total, success, gate and component scores)."
    )
    instruction = task.instruction.strip()
    return "\n\n".join([instruction] + ([shape] if shape not in instruction else []) + [how])


def build_server(package: EnvironmentPackage, workers: int = 1, task: Any = None) -> Server:
    """A low-level MCP Server whose lifespan owns the sandbox pool of this package.

    `task` (a TaskSpec or its dict) binds the server to that task: its instruction becomes the
    server's instructions and `submit_answer` ends and scores a session's episode.
    """
    schemas = package.tools
    instructions = None
    if task is not None:
        run = TaskRun(task)
        task = run.task
        schemas = run.tools(package.tools)
        instructions = task_instructions(task)
    listed = mcp_names(
        [tool["function"]["name"] for tool in schemas],
        package.manifest.get("original_names") or {},
    )  # a theme's own operation name where MCP allows it (`apps.list`)
    called = {shown: name for name, shown in listed.items()}
    tools = [
        types.Tool(
            name=listed[tool["function"]["name"]],
            description=tool["function"].get("description"),
            input_schema=tool["function"]["parameters"],
        )
        for tool in schemas
    ]

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
        pool = await anyio.to_thread.run_sync(lambda: SandboxPool(workers=workers))
        episodes = SessionEpisodes(package, pool, task=task)
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
        if task is not None and params.name == SUBMIT_ANSWER:
            return await submit_answer(ctx, episodes, params.arguments or {})
        result = await anyio.to_thread.run_sync(
            episodes.call_tool,
            session_key(ctx),
            called.get(params.name, params.name),
            params.arguments or {},
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

    async def submit_answer(
        ctx: ServerRequestContext, episodes: SessionEpisodes, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        breakdown, problem = await anyio.to_thread.run_sync(
            episodes.submit, session_key(ctx), arguments
        )
        if breakdown is None:
            return types.CallToolResult(
                content=[
                    types.TextContent(
                        text=f"invalid_arguments: invalid arguments for {SUBMIT_ANSWER}: {problem}"
                    )
                ],
                is_error=True,
            )
        from tasks.privacy import agent_reward  # task servers run under Django (serve_mcp)

        reward = agent_reward(breakdown.to_dict())  # scores only: reasons may describe the gold
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(reward, ensure_ascii=False))],
            structured_content=reward,
        )

    description = package.manifest.get("description")
    if task is not None:
        description = f"{description or package.name}. Task: {task.instruction.strip()}"
    server = Server(
        package.name,
        version=str(package.version),
        title=package.manifest.get("title"),
        description=description,
        instructions=instructions,
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


async def serve_stdio(package_path: str, task: Any = None) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(load_package(package_path), task=task)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(package_path: str, task: Any = None) -> None:
    """Serve the package (bound to `task` if given) over stdio until the client closes."""
    anyio.run(serve_stdio, package_path, task)


def build_http_app(
    package_path: str, workers: int = 1, host: str = "127.0.0.1", task: Any = None
) -> Starlette:
    """An ASGI app serving the package (bound to `task` if given) over streamable HTTP at /mcp."""
    server = build_server(load_package(package_path), workers=workers, task=task)
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
