"""The sandbox worker: the only process where environment tool code and untrusted programs run.

pool.py starts it as `python -I sandbox_worker.py '<config json>'`. It confines itself
(sandbox_guard), then serves requests from its pipe, one at a time. It hosts many episodes;
each episode is its own copy of a package's state (an in-memory SQLite backup, or a file copy in
the episode directory for big databases; for a package of JSON collections, a copy of its files
in the episode directory, see collection_episode.py).

Wire format (both directions): 4-byte big-endian length, then a UTF-8 JSON object. Replies are
JSON, never pickle, so a compromised worker cannot run code in the parent.

Standard library only.
"""

from __future__ import annotations

import _thread
import builtins
import contextlib
import errno
import io
import json
import linecache
import os
import shutil
import signal
import sqlite3
import struct
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import change_tracking  # noqa: E402
import collection_episode  # noqa: E402
import determinism  # noqa: E402
import landlock  # noqa: E402
import sandbox_guard  # noqa: E402

sys.path.pop(0)

HEADER = struct.Struct(">I")
# (ok, result json or error message, error_kind, origin: where a tool error was raised)
Outcome = tuple[bool, str, str | None, str | None]
_live_threads = _thread._count  # threads started since the worker began (it has none itself)


def _function_name(tool):
    """The function of a tool: `get-stations` lives in `def get_stations` (python_source.python_name)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in tool)


class CallTimeout(BaseException):
    """Raised by the wall-clock timer inside a call (BaseException: `except Exception` misses it)."""


class ToolCallError(Exception):
    """Raised inside a program when a tool call fails; carries the error kind."""

    def __init__(self, message: str, error_kind: str) -> None:
        super().__init__(message)
        self.error_kind = error_kind


class EpisodeConnection(sqlite3.Connection):
    """The `db` a tool receives: SQLite itself refuses ATTACH (opening other files) and
    extension loading, and long queries stop at the call's deadline."""

    def confine(self, past_deadline: Callable[[], bool]) -> None:
        sqlite3.Connection.setlimit(self, sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        sqlite3.Connection.set_authorizer(self, _authorize)
        sqlite3.Connection.set_progress_handler(self, past_deadline, 10_000)

    def set_authorizer(self, *args: Any, **kwargs: Any) -> None:
        raise sandbox_guard.SandboxViolation("changing the SQLite authorizer is not allowed")

    def setlimit(self, *args: Any, **kwargs: Any) -> int:
        raise sandbox_guard.SandboxViolation("changing SQLite limits is not allowed")


def _authorize(action: int, arg1: Any, arg2: Any, database: Any, trigger: Any) -> int:
    """Deny ATTACH/DETACH and anything that would tamper with the episode's change tracking."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if change_tracking.refuses(action, arg1, arg2, trigger):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


@dataclass
class LoadedPackage:
    """A package's tools module and canonical (initial) state, shared by its episodes."""

    key: str
    tools: dict[str, Callable[..., Any]]
    schemas: dict[str, dict[str, Any]]
    state_path: str
    initial: sqlite3.Connection
    in_memory: bool
    initial_state: change_tracking.InitialState


@dataclass
class HostedEpisode:
    package: LoadedPackage
    db: sqlite3.Connection
    tracker: change_tracking.Tracker
    directory: str | None = None
    calls: list = field(default_factory=list)


class Worker:
    def __init__(self, config: dict[str, Any], scope: list[str] | None = None) -> None:
        self.config = config
        self.directory = config["worker_dir"]
        self.packages: dict[str, LoadedPackage | collection_episode.CollectionPackage] = {}
        self.episodes: dict[str, HostedEpisode | collection_episode.CollectionEpisode] = {}
        self.violations: list[str] = []
        self.deadline = float("inf")
        self.max_output = config["max_output_bytes"]
        self.scope = scope if scope is not None else [""]  # the audit hook's episode scope
        self.world = determinism.FrozenWorld()

    # -- requests ---------------------------------------------------------------------------

    def handle(self, request: dict[str, Any]) -> str:
        """Dispatch one request and return the JSON reply text.

        A thread left running by tool code would go on acting between later calls, beyond any
        time limit and inside other episodes' turns: the reply then asks the pool to replace
        this worker.
        """
        handler = getattr(self, "op_" + request["op"])
        reply = handler(request)
        if _live_threads():
            reply = reply[: reply.rindex("}")] + ', "retire": true}'
        return reply

    def op_ping(self, request: dict[str, Any]) -> str:
        return json.dumps(
            {
                "ok": True,
                "pid": os.getpid(),
                "net_isolated": self.config["net"],
                "landlock_abi": self.config["landlock_abi"],
                "capabilities": self.config["capabilities"],
            }
        )

    def op_load(self, request: dict[str, Any]) -> str:
        """Load a package's tools (compiled from its source) and open its initial state."""
        directory = os.path.join(self.config["packages_dir"], request["key"])
        state = request.get("state") or {}
        if state.get("backend") == collection_episode.BACKEND:
            self.packages[request["key"]] = collection_episode.load_package(
                request["key"], directory, request["schemas"], state
            )
            return '{"ok": true}'
        source_path = os.path.join(directory, "tools.py")
        with open(source_path, encoding="utf-8") as handle:
            source = handle.read()
        namespace = self._exec_source(source, source_path, "aw_tools_" + request["key"])
        tools = {
            name: namespace[_function_name(name)]
            for name in request["schemas"]
            if _function_name(name) in namespace
        }
        state_path = os.path.join(directory, "state.sqlite")
        in_memory = os.path.getsize(state_path) <= self.config["in_memory_max_bytes"]
        source_db = sqlite3.connect(f"file:{state_path}?mode=ro", uri=True)
        if in_memory:
            initial = sqlite3.connect(":memory:")
            source_db.backup(initial)
            source_db.close()
        else:
            initial = source_db
        self.packages[request["key"]] = LoadedPackage(
            key=request["key"],
            tools=tools,
            schemas=request["schemas"],
            state_path=state_path,
            initial=initial,
            in_memory=in_memory,
            initial_state=change_tracking.InitialState(initial),
        )
        return '{"ok": true}'

    def op_start(self, request: dict[str, Any]) -> str:
        """Start an episode: its own copy of the package's initial state."""
        package = self.packages[request["package"]]
        episode_id = request["episode"]
        directory = os.path.join(self.directory, "episodes", episode_id)
        if isinstance(package, collection_episode.CollectionPackage):
            hosted = collection_episode.start_episode(
                package, directory, self.collection_scope, self._exec_source
            )
            self.episodes[episode_id] = hosted
            return json.dumps({"ok": True, "load_problems": hosted.load_problems})
        os.makedirs(directory, exist_ok=True)
        if package.in_memory:
            db = sqlite3.connect(":memory:", factory=EpisodeConnection)
            package.initial.backup(db)
        else:
            path = os.path.join(directory, "state.sqlite")
            shutil.copyfile(package.state_path, path)
            db = sqlite3.connect(path, factory=EpisodeConnection)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA foreign_keys = ON")
        tracker = change_tracking.Tracker(package.initial_state, db)  # before the authorizer
        db.confine(self._past_deadline)
        self.episodes[episode_id] = HostedEpisode(package, db, tracker, directory)
        return '{"ok": true}'

    def op_close(self, request: dict[str, Any]) -> str:
        episode = self.episodes.pop(request["episode"], None)
        if isinstance(episode, collection_episode.CollectionEpisode):
            episode.close()
        elif episode is not None:
            episode.db.close()
            if episode.directory:
                shutil.rmtree(episode.directory, ignore_errors=True)
        return '{"ok": true}'

    def op_call(self, request: dict[str, Any]) -> str:
        """One tool call, under the wall-clock timer; commits on success, rolls back on error."""
        episode = self.episodes[request["episode"]]
        started = time.perf_counter()
        with self._timer(request["timeout"]):
            outcome = self._guarded(lambda: self._invoke(episode, request["tool"], request["args"]))
        return self._reply(outcome, started)

    def op_program(self, request: dict[str, Any]) -> str:
        """Run untrusted code: `entry(call)`; call(name, **kwargs) invokes the episode's tools."""
        episode = self.episodes[request["episode"]]
        made_calls: list[list[Any]] = []
        stdout = _BoundedText(self.config["max_output_bytes"])

        def call(name: str, /, **kwargs: Any) -> Any:
            result = self._invoke(episode, name, kwargs)
            made_calls.append([name, kwargs])
            return json.loads(result)

        def run() -> str:
            namespace = self._exec_source(request["source"], "<program>", "__program__")
            entry = namespace.get(request["entry"])
            if not callable(entry):
                raise ToolCallError(f"program has no function {request['entry']!r}", "tool_error")
            return self._to_json(entry(call))

        started = time.perf_counter()
        saved = sys.stdout
        sys.stdout = stdout
        try:
            with self._timer(request["timeout"]):
                outcome = self._guarded(run, program=True)
        finally:
            sys.stdout = saved
        reply = json.loads(self._reply(outcome, started))
        reply["calls"] = made_calls
        reply["stdout"] = stdout.getvalue()
        return json.dumps(reply, default=str)

    def op_load_problems(self, request: dict[str, Any]) -> str:
        """Why tools of the episode did not load ({} for SQLite packages: they load whole)."""
        episode = self.episodes[request["episode"]]
        problems = getattr(episode, "load_problems", {})
        return json.dumps({"ok": True, "result": problems}, ensure_ascii=False)

    def op_hash(self, request: dict[str, Any]) -> str:
        """The episode's state hash from the rows its tools touched (change_tracking.py)."""
        episode = self.episodes[request["episode"]]
        return json.dumps({"ok": True, "result": episode.tracker.state_hash()})

    def op_diff(self, request: dict[str, Any]) -> str:
        """The episode's row diff from the rows its tools touched (change_tracking.py)."""
        episode = self.episodes[request["episode"]]
        diff = episode.tracker.state_diff()
        return json.dumps({"ok": True, "result": diff}, default=_jsonable, ensure_ascii=False)

    # -- running tool code --------------------------------------------------------------------

    def _invoke(self, episode: HostedEpisode, name: str, args: dict[str, Any]) -> str:
        """Call a tool on the episode's db; return its JSON result or raise ToolCallError."""
        if isinstance(episode, collection_episode.CollectionEpisode):
            return self._invoke_collection_tool(episode, name, args)
        tool = episode.package.tools.get(name)
        if tool is None:
            raise ToolCallError(f"unknown tool {name!r}", "unknown_tool")
        problem = _argument_problem(episode.package.schemas[name], args)
        if problem:
            raise ToolCallError(f"{name}: {problem}", "invalid_arguments")
        violations_before = len(self.violations)
        changes_before = episode.db.total_changes
        try:
            result = self._to_json(tool(episode.db, **args))
            if len(self.violations) > violations_before:
                raise sandbox_guard.SandboxViolation(self.violations[-1])
            episode.db.commit()
            return result
        except BaseException:
            _rollback(episode.db)
            episode.tracker.discount(changes_before)
            if len(self.violations) > violations_before:
                raise ToolCallError(self.violations[-1], "sandbox_violation") from None
            raise

    def _invoke_collection_tool(
        self, episode: collection_episode.CollectionEpisode, name: str, args: dict[str, Any]
    ) -> str:
        """Call a released tool, unmodified, on the episode's files: only its directory in
        reach, the clock frozen, randomness seeded; a failed call leaves the files as they were."""
        if name in episode.load_problems:
            raise ToolCallError(f"{name}: {episode.load_problems[name]}", "tool_error")
        tool = episode.tools.get(name)
        if tool is None:
            raise ToolCallError(f"unknown tool {name!r}", "unknown_tool")
        problem = _argument_problem(episode.package.schemas[name], args)
        if problem:
            raise ToolCallError(f"{name}: {problem}", "invalid_arguments")
        violations_before = len(self.violations)
        saved = episode.snapshot()
        try:
            with self.collection_scope(episode.directory, episode.package.epoch, episode.seed()):
                value = tool(**args)
            result = self._to_json(value)
            if len(self.violations) > violations_before:
                raise sandbox_guard.SandboxViolation(self.violations[-1])
            episode.calls += 1
            return result
        except BaseException:
            episode.restore(saved)
            if len(self.violations) > violations_before:
                raise ToolCallError(self.violations[-1], "sandbox_violation") from None
            raise

    @contextlib.contextmanager
    def collection_scope(self, directory: str, epoch: float, seed: str) -> Iterator[None]:
        """What a released tool's load or call runs in: MCP_DB_DIR names the episode directory,
        the audit hook opens only that directory of the worker's files, and the clock and
        randomness are frozen for the environment version (determinism.py)."""
        _set_environment_variable("MCP_DB_DIR", directory)
        self.scope[0] = directory
        try:
            with self.world.active(epoch, seed):
                yield
        finally:
            self.scope[0] = ""

    def _guarded(self, run: Callable[[], str], program: bool = False) -> Outcome:
        """Run and classify what went wrong: (ok, result json or message, error_kind, origin)."""
        outcome = self._classified(run, program)
        if _live_threads():
            message = "starting threads is not allowed in the sandbox; the worker is replaced"
            self.violations.append(message)
            return False, message, "sandbox_violation", None
        return outcome

    def _classified(self, run: Callable[[], str], program: bool) -> Outcome:
        """A tool's exception reads as a refusal or a failure in words (its kind from the
        exception, see `_refusal_kind`); a program's as `Type: message`, a tool_error."""
        describe = _describe_program if program else _describe
        kind_of = (lambda exc: "tool_error") if program else _error_kind
        try:
            return True, run(), None, None
        except ToolCallError as exc:
            return False, str(exc), exc.error_kind, None
        except CallTimeout:
            return False, "call exceeded its time limit", "timeout", None
        except sandbox_guard.SandboxViolation as exc:
            return False, str(exc), "sandbox_violation", None
        except MemoryError:
            return False, "memory limit exceeded", "resource_limit", None
        except RecursionError:
            return False, "recursion limit exceeded", "resource_limit", None
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc) and self._past_deadline():
                return False, "call exceeded its time limit (query interrupted)", "timeout", None
            return False, describe(exc), kind_of(exc), _origin(exc)
        except OSError as exc:
            if exc.errno == errno.EFBIG:
                return False, "file size limit exceeded", "resource_limit", None
            if exc.errno == errno.EAGAIN:
                return False, f"process or thread limit: {exc}", "resource_limit", None
            return False, describe(exc), kind_of(exc), _origin(exc)
        except _OutputTooLarge as exc:
            return False, str(exc), "output_too_large", None
        except BaseException as exc:  # noqa: BLE001 - any failure of untrusted code
            return False, describe(exc), kind_of(exc), _origin(exc)

    def _exec_source(self, source: str, filename: str, module_name: str) -> dict[str, Any]:
        code = compile(source, filename, "exec")
        lines = source.splitlines(keepends=True)
        linecache.cache[filename] = (len(source), None, lines, filename)
        namespace: dict[str, Any] = {"__name__": module_name, "__builtins__": builtins}
        exec(code, namespace)  # noqa: S102 - this is the sandbox
        return namespace

    def _to_json(self, value: Any) -> str:
        text = json.dumps(value, default=_jsonable, ensure_ascii=False)
        if len(text) > self.max_output:
            raise _OutputTooLarge(
                f"result is {len(text)} bytes; the limit is {self.max_output} bytes"
            )
        return text

    def _reply(self, outcome: Outcome, started: float) -> str:
        """The reply: the result, or the error in words with its kind, and apart from it
        `origin`, where in the tool source or program a tool error was raised."""
        ok, payload, error_kind, origin = outcome
        elapsed = round((time.perf_counter() - started) * 1000, 3)
        if ok:
            return f'{{"ok": true, "result": {payload}, "worker_ms": {elapsed}}}'
        return json.dumps(
            {
                "ok": False,
                "error": payload,
                "error_kind": error_kind,
                "origin": origin,
                "worker_ms": elapsed,
            }
        )

    # -- time limits --------------------------------------------------------------------------

    def _past_deadline(self) -> bool:
        return time.monotonic() > self.deadline

    def _timer(self, seconds: float) -> _Timer:
        return _Timer(self, seconds)


class _Timer:
    """ITIMER_REAL raises CallTimeout in the call; the progress handler stops long queries."""

    def __init__(self, worker: Worker, seconds: float) -> None:
        self.worker, self.seconds = worker, seconds

    def __enter__(self) -> None:
        self.worker.deadline = time.monotonic() + self.seconds
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.worker.deadline = float("inf")


class _OutputTooLarge(Exception):
    pass


class _BoundedText(io.StringIO):
    """stdout for programs: keeps the first `limit` characters, drops the rest."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def write(self, text: str) -> int:
        room = self.limit - self.tell()
        if room > 0:
            super().write(text[:room])
        return len(text)


def _on_alarm(signum: int, frame: object) -> None:
    raise CallTimeout()


def _set_environment_variable(name: str, value: str) -> None:
    """Set os.environ[name] for code in this process without os.putenv, which the audit hook
    refuses (tool code must not change the environment; the worker itself sets MCP_DB_DIR)."""
    environ = os.environ
    environ._data[environ.encodekey(name)] = environ.encodevalue(value)  # type: ignore[attr-defined]


def _rollback(db: sqlite3.Connection) -> None:
    try:
        db.rollback()
    except sqlite3.Error:
        pass


# Exceptions a tool raises on purpose to refuse a call (no such row, a rule broken): the agent
# reads their message alone. KeyError, IndexError and UnicodeError are lookups gone wrong.
_REFUSALS = (ValueError, LookupError, PermissionError)
_SLIPS = (KeyError, IndexError, UnicodeError)
_REFUSAL_KINDS = ("tool_error", "invalid_arguments")


def _refusal_kind(exc: BaseException) -> str | None:
    """The error kind of a refusal raised on purpose, or None for an unexpected exception.
    A tool marks an argument in the wrong form with `tool_refusal = "invalid_arguments"` on
    its exception class (the generated tools' prelude does); only the two kinds are taken."""
    try:
        marked = getattr(type(exc), "tool_refusal", None)
    except Exception:  # noqa: BLE001 - a hostile class
        marked = None
    if isinstance(marked, str) and marked in _REFUSAL_KINDS:
        return marked
    if isinstance(exc, _REFUSALS) and not isinstance(exc, _SLIPS):
        return "tool_error"
    return None


def _error_kind(exc: BaseException) -> str:
    return _refusal_kind(exc) or "tool_error"


def _describe(exc: BaseException) -> str:
    """What the agent reads (where it was raised is `_origin`, kept apart): a refusal's message
    as the tool wrote it; for an unexpected exception, that the tool failed and how, in words."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__
        message = "<unprintable>"
    if _refusal_kind(exc) is not None:
        return message or "the tool refused the call without saying why"
    return f"the tool failed unexpectedly ({_failure_words(exc)}): {message or 'no message'}"


def _describe_program(exc: BaseException) -> str:
    """`Type: message` for a program's own exception: its author reads Python."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__
        message = "<unprintable>"
    return f"{type(exc).__name__}: {message}"


def _failure_words(exc: BaseException) -> str:
    """`sqlite3.OperationalError` -> 'a database error', `KeyError` -> 'a key error'."""
    if isinstance(exc, sqlite3.Error):
        return "a database error"
    name = type(exc).__name__
    words = "".join(f" {ch.lower()}" if ch.isupper() else ch for ch in name).strip() or "failure"
    return ("an " if words[0] in "aeiou" else "a ") + words


def _origin(exc: BaseException) -> str | None:
    """Where in the tool source or program `exc` was raised (`tools.py:323 in _th_call`), for
    whoever debugs the generated code; never part of the error an agent reads."""
    where = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        # tools.py, a released tool's <function>.py, or a program: never a library's frame
        released = filename.endswith(".py") and not os.path.isabs(filename)
        if filename == "<program>" or filename.endswith(f"{os.sep}tools.py") or released:
            where = f"{os.path.basename(filename)}:{lineno} in {frame.f_code.co_name}"
    return where


def _jsonable(value: Any) -> Any:
    if isinstance(value, sqlite3.Row):
        return dict(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"result of type {type(value).__name__} is not JSON-serialisable")


JSON_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _argument_problem(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    """A light schema check for calls made from programs (the parent checks fully)."""
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in args:
            return f"missing required argument {name!r}"
    for name, value in args.items():
        if name not in properties:
            if schema.get("additionalProperties", True) is False:
                return f"unexpected argument {name!r}"
            continue
        expected = properties[name].get("type")
        kinds = [expected] if isinstance(expected, str) else expected or []
        if kinds and not any(
            isinstance(value, JSON_TYPES.get(k, object))
            and not (isinstance(value, bool) and k in ("integer", "number"))
            for k in kinds
        ):
            return f"argument {name!r} must be {' or '.join(kinds)}, got {value!r}"[:300]
    return None


# -- pipe protocol -------------------------------------------------------------------------------


def read_frame(fd: int) -> bytes | None:
    header = _read_exact(fd, HEADER.size)
    if header is None:
        return None
    return _read_exact(fd, HEADER.unpack(header)[0])


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, remaining)
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def write_frame(fd: int, payload: bytes) -> None:
    view = memoryview(HEADER.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def restrict_filesystem(read_roots: list[str], write_roots: list[str]) -> int:
    """Landlock where the kernel has it (its ABI version), else 0 and the other layers hold."""
    try:
        return landlock.restrict(read_roots, write_roots)
    except OSError:
        return 0


def main() -> None:
    config = json.loads(sys.argv[1])
    requests, replies = config["request_fd"], config["reply_fd"]
    os.chdir(config["worker_dir"])
    config["net"] = sandbox_guard.isolate_network() if config["isolate_network"] else False
    if config["drop_privileges"]:
        sandbox_guard.drop_privileges()
    config["capabilities"] = sandbox_guard.drop_capabilities()
    sandbox_guard.apply_limits(config["memory_mb"], config["file_size_mb"], config["cpu_budget_s"])
    config["landlock_abi"] = restrict_filesystem(config["read_roots"], [config["worker_dir"]])
    signal.signal(signal.SIGALRM, _on_alarm)
    scope = [""]  # the episode directory while a collection episode's tool code runs
    worker = Worker(config, scope)
    sandbox_guard.patch_socket()
    sandbox_guard.forget_denied_modules()
    sandbox_guard.install_audit_hook(
        read_roots=config["read_roots"],
        write_roots=[config["worker_dir"]],
        violations=worker.violations,
        scope=scope,
        private_roots=[config["packages_dir"], config["worker_dir"]],
    )
    sys.stdout = _BoundedText(0)  # tools' prints go nowhere; programs capture their own
    write_frame(replies, worker.op_ping({}).encode())
    while True:
        frame = read_frame(requests)
        if frame is None:
            return
        try:
            reply = worker.handle(json.loads(frame))
        except BaseException as exc:  # noqa: BLE001 - the worker must keep serving
            try:
                error = f"the sandbox worker failed: {_describe_program(exc)}"
            except BaseException:  # noqa: BLE001
                error = type(exc).__name__
            reply = json.dumps({"ok": False, "error": error, "error_kind": "worker_error"})
        write_frame(replies, reply.encode())


if __name__ == "__main__":
    main()
