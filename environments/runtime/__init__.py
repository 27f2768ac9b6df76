"""Environment runtime: isolated episodes of an environment package, tools run in a sandbox.

Where things happen:
- pool.py            SandboxPool.start_episode: where an episode starts (its own state copy)
- episode.py         Episode.call_tool: checks a call, then SandboxPool.send carries it into
                     the sandbox worker (worker_process.py is the pipe to that process)
- sandbox_worker.py  the worker process: runs tool code and programs on the episode's db
- sandbox_guard.py   what confines the worker (limits, no network, audit hook)
- landlock.py        the kernel's file, exec and TCP boundary for the worker (Linux Landlock)
- state.py           state hash and the row-level state diff (full reference versions)
- change_tracking.py the incremental hash and diff of an episode, from the rows its tools
                     touched (TEMP triggers; run inside the worker)
- schema_check.py    argument validation against the tool's JSON schema
- docker_backend.py  the same workers in Docker containers
"""

from environments.package import EnvironmentPackage, PackageError, load_package
from environments.runtime.episode import Episode, ProgramResult, ToolCallResult
from environments.runtime.pool import SandboxLimits, SandboxPool
from environments.runtime.state import state_diff, state_hash
from environments.runtime.worker_process import SandboxUnavailable

__all__ = [
    "EnvironmentPackage",
    "Episode",
    "PackageError",
    "ProgramResult",
    "SandboxLimits",
    "SandboxPool",
    "SandboxUnavailable",
    "ToolCallResult",
    "load_package",
    "state_diff",
    "state_hash",
]
