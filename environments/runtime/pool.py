"""SandboxPool: warm sandbox workers that host episodes.

- `start_episode` places a new episode on the least busy worker (that is where an episode starts);
- `send` carries one request of an episode to its worker and enforces the wall-time limit: a worker
  that overruns is killed and replaced, and every episode it hosted is rebuilt on the new worker
  by replaying its journal of successful calls;
- `run_tool_tests` runs a package's tool tests, each in a fresh episode.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import sysconfig
import tempfile
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.package import COLLECTION_BACKEND, EnvironmentPackage, load_package
from environments.runtime.episode import Episode, ProgramResult
from environments.runtime.sandbox_guard import NOBODY
from environments.runtime.schema_check import ArgumentChecker
from environments.runtime.worker_process import WorkerDied, WorkerProcess, WorkerTimeout


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of every worker process; a worker hosts many episodes."""

    memory_mb: int = 1024  # RLIMIT_AS of a worker
    file_size_mb: int = 512  # RLIMIT_FSIZE: biggest file a worker may write
    cpu_budget_s: int = 3600  # RLIMIT_CPU: lifetime CPU of a worker before it is replaced
    max_output_bytes: int = 1_000_000  # biggest JSON result of one call or program
    in_memory_max_mb: int = 16  # states up to this size are copied into memory, bigger to a file


@dataclass
class WorkerSlot:
    """One worker position in the pool: the current process and the episodes it hosts."""

    index: int
    process: Any = None
    generation: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    episodes: dict[str, Episode] = field(default_factory=dict)
    packages: set[str] = field(default_factory=set)


class _RebuildFailed(Exception):
    def __init__(self, episode: Episode, reason: str) -> None:
        super().__init__(reason)
        self.episode = episode


class SandboxPool:
    """Warm sandbox worker processes; start episodes of environment packages on them."""

    def __init__(
        self,
        workers: int = 2,
        *,
        call_timeout: float = 5.0,
        program_timeout: float = 30.0,
        kill_grace: float = 1.0,
        limits: SandboxLimits | None = None,
        root: str | os.PathLike[str] | None = None,
        isolate_network: bool = True,
        drop_privileges: bool = True,
        recycle_after_program: bool = True,
        spawn: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        """`spawn(config)` starts one worker (default: a local process; see docker_backend).

        recycle_after_program: replace the worker after `run_program`, so untrusted program
        code cannot leave anything behind in a process that other episodes share.
        """
        self.call_timeout = call_timeout
        self.program_timeout = program_timeout
        self.kill_grace = kill_grace
        self.limits = limits or SandboxLimits()
        self.isolate_network = isolate_network
        # Dropping root needs a Python installation that `nobody` can read.
        self.drop_privileges = (
            drop_privileges
            and os.geteuid() == 0
            and _readable_by_others(sysconfig.get_path("stdlib"))
        )
        self.recycle_after_program = recycle_after_program
        self._spawn_worker = spawn or WorkerProcess
        self.root = Path(tempfile.mkdtemp(prefix="aw-sandbox-", dir=root))
        self.root.chmod(0o755)
        (self.root / "packages").mkdir(mode=0o755)
        (self.root / "workers").mkdir(mode=0o755)
        self._lock = threading.Lock()
        self._checkers: dict[str, ArgumentChecker] = {}
        self._staged: set[str] = set()
        self.slots = [WorkerSlot(index) for index in range(workers)]
        try:
            for slot in self.slots:
                slot.process = self._spawn(slot)
        except BaseException:
            self.close()
            raise

    # -- episodes ----------------------------------------------------------------------------

    def start_episode(self, package: EnvironmentPackage | str | os.PathLike[str]) -> Episode:
        """A new isolated episode: its own copy of the package's initial state."""
        if not isinstance(package, EnvironmentPackage):
            package = load_package(package)
        self._stage(package)
        with self._lock:
            slot = min(self.slots, key=lambda s: len(s.episodes))
            episode = Episode(self, package, uuid.uuid4().hex[:16], slot)
            slot.episodes[episode.id] = episode
        with slot.lock:
            try:
                self._open_on_worker(slot, episode)
            except (WorkerTimeout, WorkerDied):
                self._replace_worker(slot)
        return episode

    def send(self, episode: Episode, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Carry one request of `episode` into its sandbox worker and return the reply.

        The worker stops a call at `timeout` itself; if it does not answer within
        `timeout + kill_grace`, it is killed and replaced and its episodes are replayed.
        """
        slot = episode.slot
        request["timeout"] = timeout
        with slot.lock:
            try:
                reply = slot.process.request(request, timeout + self.kill_grace)
                if reply.get("retire"):
                    self._replace_worker(slot)  # tool code left a thread running in it
                return reply
            except WorkerTimeout:
                self._replace_worker(slot)
                return {
                    "ok": False,
                    "error": f"call exceeded its time limit of {timeout:g} s; worker replaced",
                    "error_kind": "timeout",
                }
            except WorkerDied as exc:
                self._replace_worker(slot)
                return {
                    "ok": False,
                    "error": f"sandbox worker lost: {exc}",
                    "error_kind": "worker_lost",
                }

    def run_program(
        self,
        episode: Episode,
        source: str,
        entry: str = "solve",
        timeout: float | None = None,
        recycle: bool | None = None,
    ) -> ProgramResult:
        """See Episode.run_program. The program's successful tool calls join the journal."""
        request = {"op": "program", "episode": episode.id, "source": source, "entry": entry}
        reply = self.send(episode, request, self.program_timeout if timeout is None else timeout)
        calls = reply.get("calls", [])
        episode.journal.extend((name, arguments) for name, arguments in calls)
        recycle = self.recycle_after_program if recycle is None else recycle
        if recycle and reply.get("error_kind") not in ("timeout", "worker_lost"):
            with episode.slot.lock:
                self._replace_worker(episode.slot)
        error = reply.get("error")
        if error and reply.get("origin"):  # programs are ours: their readers debug the code
            error = f"{error} (at {reply['origin']})"
        return ProgramResult(
            ok=reply["ok"],
            value=reply.get("result"),
            error=error,
            error_kind=reply.get("error_kind"),
            duration_ms=reply.get("worker_ms", 0.0),
            calls=[{"tool": name, "arguments": arguments} for name, arguments in calls],
            stdout=reply.get("stdout", ""),
        )

    def restart_episode(self, episode: Episode) -> None:
        """Reset: drop the episode's state and journal and copy the initial state again."""
        slot = episode.slot
        with slot.lock:
            episode.journal.clear()
            episode.lost_reason = None
            try:
                slot.process.request({"op": "close", "episode": episode.id}, self.call_timeout)
                self._open_on_worker(slot, episode)
            except (WorkerTimeout, WorkerDied):
                self._replace_worker(slot)

    def close_episode(self, episode: Episode) -> None:
        slot = episode.slot
        with slot.lock:
            slot.episodes.pop(episode.id, None)
            try:
                slot.process.request({"op": "close", "episode": episode.id}, self.call_timeout)
            except (WorkerTimeout, WorkerDied):
                self._replace_worker(slot)

    # -- verification ------------------------------------------------------------------------

    def run_tool_tests(
        self, package: EnvironmentPackage | str | os.PathLike[str]
    ) -> dict[str, dict[str, Any]]:
        """Run every `test_<tool>__<case>(call)` in a fresh episode.

        Returns {tool: {"passed": int, "failed": int, "errors": [str]}} for every tool of the
        package (tools without tests get zeros); test accuracy is passed / (passed + failed).
        """
        if not isinstance(package, EnvironmentPackage):
            package = load_package(package)
        report: dict[str, dict[str, Any]] = {
            tool: {"passed": 0, "failed": 0, "errors": []} for tool in package.tool_names
        }
        for tool, tests in package.tool_tests.items():
            for test in tests:
                with self.start_episode(package) as episode:
                    outcome = self.run_program(
                        episode, package.tests_source, entry=test, recycle=False
                    )
                if outcome.ok:
                    report[tool]["passed"] += 1
                else:
                    report[tool]["failed"] += 1
                    report[tool]["errors"].append(f"{test}: {outcome.error}")
        return report

    def argument_problem(
        self, package: EnvironmentPackage, tool: str, arguments: Any
    ) -> str | None:
        checker = self._checkers.get(package.content_hash)
        if checker is None:
            checker = self._checkers[package.content_hash] = ArgumentChecker(package.tools)
        return checker.problem(tool, arguments)

    # -- pool --------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Workers, hosted episodes and resident memory per worker."""
        return {
            "workers": len(self.slots),
            "episodes": sum(len(slot.episodes) for slot in self.slots),
            "worker_rss_bytes": [slot.process.rss_bytes() for slot in self.slots],
            "worker_pids": [slot.process.pid for slot in self.slots],
        }

    def close(self) -> None:
        for slot in self.slots:
            if slot.process is not None:
                slot.process.stop()
                slot.process = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _spawn(self, slot: WorkerSlot) -> Any:
        slot.generation += 1
        worker_dir = self.root / "workers" / f"w{slot.index}-{slot.generation}"
        worker_dir.mkdir(mode=0o700)
        if self.drop_privileges:
            os.chown(worker_dir, NOBODY, NOBODY)
        config = {
            "worker_dir": str(worker_dir),
            "packages_dir": str(self.root / "packages"),
            "read_roots": _python_roots() + [str(self.root / "packages")],
            "memory_mb": self.limits.memory_mb,
            "file_size_mb": self.limits.file_size_mb,
            "cpu_budget_s": self.limits.cpu_budget_s,
            "max_output_bytes": self.limits.max_output_bytes,
            "in_memory_max_bytes": self.limits.in_memory_max_mb * 1024 * 1024,
            "isolate_network": self.isolate_network,
            "drop_privileges": self.drop_privileges,
        }
        return self._spawn_worker(config)

    def _stage(self, package: EnvironmentPackage) -> None:
        """Copy the files a worker needs (tools.py, state.sqlite; or the collections/ and
        tools/ folders of a package of JSON collections) to a read-only place."""
        key = package.content_hash[:16]
        with self._lock:
            if key in self._staged:
                return
            target = self.root / "packages" / key
            target.mkdir(mode=0o755)
            if package.state_backend == COLLECTION_BACKEND:
                for folder in ("collections", "tools"):
                    (target / folder).mkdir(mode=0o755)
                    for file in sorted((package.path / folder).iterdir()):
                        if file.is_file() and not file.is_symlink():
                            shutil.copyfile(file, target / folder / file.name)
                            (target / folder / file.name).chmod(0o644)
            else:
                for name in ("tools.py", "state.sqlite"):
                    shutil.copyfile(package.path / name, target / name)
                    (target / name).chmod(0o644)
            self._staged.add(key)

    def _open_on_worker(self, slot: WorkerSlot, episode: Episode) -> None:
        """Load the package on the worker if needed, then start the episode there (slot locked)."""
        key = episode.package.content_hash[:16]
        if key not in slot.packages:
            schemas = {
                t["function"]["name"]: t["function"]["parameters"] for t in episode.package.tools
            }
            request: dict[str, Any] = {"op": "load", "key": key, "schemas": schemas}
            if episode.package.state_backend == COLLECTION_BACKEND:
                request["state"] = collection_state(episode.package)
            reply = slot.process.request(request, self.program_timeout)
            if not reply["ok"]:
                raise RuntimeError(f"loading {episode.package.name} failed: {reply['error']}")
            slot.packages.add(key)
        reply = slot.process.request(
            {"op": "start", "episode": episode.id, "package": key}, self.program_timeout
        )
        if not reply["ok"]:
            raise RuntimeError(f"starting an episode failed: {reply['error']}")

    def _replace_worker(self, slot: WorkerSlot) -> None:
        """Kill the slot's worker, start a fresh one and rebuild its episodes (slot locked).

        An episode whose journal does not replay cleanly is marked lost: its next calls fail
        with error_kind "worker_lost".
        """
        for _attempt in range(len(slot.episodes) + 1):
            slot.process.kill()
            slot.process = self._spawn(slot)
            slot.packages.clear()
            try:
                for episode in list(slot.episodes.values()):
                    if episode.lost_reason is None:
                        self._rebuild(slot, episode)
                return
            except _RebuildFailed as failure:
                failure.episode.lost_reason = str(failure)

    def _rebuild(self, slot: WorkerSlot, episode: Episode) -> None:
        try:
            self._open_on_worker(slot, episode)
            for tool, arguments in episode.journal:
                request = {
                    "op": "call",
                    "episode": episode.id,
                    "tool": tool,
                    "args": arguments,
                    "timeout": self.call_timeout,
                }
                reply = slot.process.request(request, self.call_timeout + self.kill_grace)
                if not reply["ok"]:
                    episode.lost_reason = (
                        f"worker was replaced and replaying {tool} failed: {reply['error']}"
                    )
                    return
        except (WorkerTimeout, WorkerDied) as exc:
            raise _RebuildFailed(episode, f"worker was replaced and replay failed: {exc}") from exc


def collection_state(package: EnvironmentPackage) -> dict[str, Any]:
    """What a worker needs to host a package of JSON collections: its log collections (left
    out of state comparison), its frozen clock (seconds) and its seed."""
    from datetime import UTC, datetime

    state = package.manifest["state"]
    clock = datetime.fromisoformat(str(state.get("clock") or "1970-01-01").replace("Z", "+00:00"))
    if clock.tzinfo is None:
        clock = clock.replace(tzinfo=UTC)
    return {
        "backend": COLLECTION_BACKEND,
        "log_collections": list(state.get("log_collections") or []),
        "epoch": clock.timestamp(),
        "seed": str(state.get("seed") or package.content_hash[:16]),
    }


def _readable_by_others(path: str) -> bool:
    """Whether every directory down to `path` is searchable by other users."""
    current = Path(os.path.realpath(path))
    for directory in [current, *current.parents]:
        if not directory.stat().st_mode & stat.S_IXOTH:
            return False
    return True


def _python_roots() -> list[str]:
    """Where a worker may read: the Python installation (stdlib, site-packages) and zoneinfo."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            paths.add(path)
    paths.add("/usr/share/zoneinfo")
    return sorted(p for p in paths if os.path.realpath(p) != "/")
