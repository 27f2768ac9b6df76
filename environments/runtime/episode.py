"""An episode: one isolated run of an environment, with its own copy of the state.

`SandboxPool.start_episode` creates it. Every tool call is checked here (known tool, arguments
valid for its JSON schema), then crosses into the sandbox worker through `SandboxPool.send`.
The episode keeps a journal of its successful calls so the pool can rebuild its state on a
fresh worker if its worker is lost.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from environments.package import EnvironmentPackage
    from environments.runtime.pool import SandboxPool, WorkerSlot

logger = logging.getLogger(__name__)

ERROR_KINDS = (
    "unknown_tool",
    "invalid_arguments",
    "tool_error",
    "timeout",
    "resource_limit",
    "sandbox_violation",
    "output_too_large",
    "worker_lost",
)


@dataclass
class ToolCallResult:
    """What one tool call did: the result, or the error and its kind (see ERROR_KINDS)."""

    tool: str
    arguments: dict[str, Any]
    ok: bool
    result: Any = None
    error: str | None = None
    error_kind: str | None = None
    duration_ms: float = 0.0
    # Where in the tool source a tool_error was raised (`tools.py:323 in _th_call`): for the
    # researcher debugging generated code (also in the server log), never in what an agent reads.
    error_origin: str | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The call as an agent and the session record see it (error_origin left out)."""
        data = asdict(self)
        data.pop("error_origin")
        return data


@dataclass
class ProgramResult:
    """What `Episode.run_program` returned: entry's value or the error, and the tool calls."""

    ok: bool
    value: Any = None
    error: str | None = None
    error_kind: str | None = None
    duration_ms: float = 0.0
    calls: list[dict[str, Any]] = field(default_factory=list)
    stdout: str = ""


class EpisodeClosed(RuntimeError):
    pass


class Episode:
    def __init__(
        self, pool: SandboxPool, package: EnvironmentPackage, episode_id: str, slot: WorkerSlot
    ) -> None:
        self.pool = pool
        self.package = package
        self.id = episode_id
        self.slot = slot
        self.journal: list[tuple[str, dict[str, Any]]] = []  # successful calls, for replay
        self.lost_reason: str | None = None
        self.closed = False

    def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, timeout: float | None = None
    ) -> ToolCallResult:
        """Run one tool in the sandbox on this episode's state. Never raises for tool failures."""
        arguments = {} if arguments is None else arguments
        started = time.perf_counter()

        def failed(error: str, kind: str, origin: str | None = None) -> ToolCallResult:
            elapsed = (time.perf_counter() - started) * 1000
            error = error if error.startswith(f"{name}: ") else f"{name}: {error}"
            return ToolCallResult(name, arguments, False, None, error, kind, elapsed, origin)

        self._check_open()
        if self.lost_reason:
            return failed(self.lost_reason, "worker_lost")
        if self.package.tool_schema(name) is None:
            return ToolCallResult(
                name,
                arguments,
                False,
                error=f"unknown tool {name!r}; tools: {self.package.tool_names}",
                error_kind="unknown_tool",
            )
        problem = self.pool.argument_problem(self.package, name, arguments)
        if problem:
            return failed(problem, "invalid_arguments")

        timeout = self.pool.call_timeout if timeout is None else timeout
        request = {"op": "call", "episode": self.id, "tool": name, "args": arguments}
        reply = self.pool.send(self, request, timeout)  # crosses into the sandbox worker
        if reply["ok"]:
            elapsed = (time.perf_counter() - started) * 1000
            self.journal.append((name, arguments))
            return ToolCallResult(name, arguments, True, reply["result"], None, None, elapsed)
        origin = reply.get("origin")
        if origin:
            logger.info("episode %s: %s raised at %s: %s", self.id, name, origin, reply["error"])
        return failed(reply["error"], reply["error_kind"], origin)

    def run_program(
        self,
        source: str,
        entry: str = "solve",
        timeout: float | None = None,
        recycle: bool | None = None,
    ) -> ProgramResult:
        """Run untrusted Python in the sandbox: `entry(call)`, where `call(name, **kwargs)`
        invokes this episode's tools and raises on a tool error. Same limits as tool calls.
        ``recycle``: replace the worker afterwards (default: the pool's setting); False only for
        code this project wrote itself (the programmatic task templates)."""
        return self.pool.run_program(self, source, entry, timeout, recycle)

    def state_hash(self) -> str:
        """Canonical, order-independent sha256 of this episode's tables (the worker computes it
        from the rows the episode touched; equal to state.state_hash of its database)."""
        return self._query("hash")

    def state_diff(self) -> dict[str, dict[str, list[Any]]]:
        """Row-level changes since the episode started (made in the worker from the touched
        rows, see change_tracking.py; equal to state.state_diff)."""
        return self._query("diff")

    def load_problems(self) -> dict[str, str]:
        """{tool: why its code did not load} in this episode; {} when every tool loaded (always
        for SQLite packages, whose tools load as one module or not at all)."""
        return self._query("load_problems")

    def reset(self) -> None:
        """Back to the package's initial state, on the same worker."""
        self._check_open()
        self.pool.restart_episode(self)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.pool.close_episode(self)

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _query(self, op: str) -> Any:
        self._check_open()
        if self.lost_reason:
            raise EpisodeClosed(f"episode {self.id} was lost: {self.lost_reason}")
        reply = self.pool.send(self, {"op": op, "episode": self.id}, self.pool.program_timeout)
        if not reply["ok"]:
            raise RuntimeError(f"{op} failed: {reply['error']}")
        return reply["result"]

    def _check_open(self) -> None:
        if self.closed:
            raise EpisodeClosed(f"episode {self.id} is closed")
