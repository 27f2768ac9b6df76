"""Escape attempts against the sandbox worker, from tool code that knows how it is built.

The Python layer (the audit hook) must hold against code that rebinds the guard's globals,
builtins and os.path, hands it a path object that lies, forges bytecode, reaches interpreter
internals or leaves a thread behind. Beneath it, Landlock and an empty capability set must refuse
files, programs, TCP and root's powers even to code that got past Python.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from environments.runtime import SandboxPool, landlock, load_package
from environments.runtime.pool import _python_roots
from tests.support.sample_package import build_sample_package, simple_tool

STDLIB = os.path.dirname(os.__file__)
MARKER = "/tmp/aw_escape_marker.txt"

ESCAPES = {
    # The guard's module globals are tool-reachable through sys.modules.
    "rebind_guard_globals": """
        import sys
        guard = sys.modules["sandbox_guard"]
        guard.REFUSED_EVENTS = frozenset()
        guard.DENIED_MODULES = frozenset()
        guard.PATH_READ_EVENTS = frozenset()
        import os
        return os.system("echo escaped > /tmp/aw_escape_marker.txt")
    """,
    "rebind_builtins": """
        import builtins
        saved = builtins.any, builtins.isinstance
        builtins.any = lambda items: True
        builtins.isinstance = lambda obj, kind: False
        try:
            return open("/etc/passwd").read()
        finally:
            builtins.any, builtins.isinstance = saved
    """,
    "rebind_os_path": """
        import os, posixpath
        saved = os.fspath, posixpath.normpath, posixpath.join
        os.fspath = lambda path: "inside.txt"
        posixpath.normpath = lambda path: os.getcwd() + "/inside.txt"
        posixpath.join = lambda *parts: os.getcwd() + "/inside.txt"
        try:
            return open("/etc/passwd").read()
        finally:
            os.fspath, posixpath.normpath, posixpath.join = saved
    """,
    "lying_str_subclass": """
        class Innocent(str):
            def startswith(self, *args, **kwargs):
                return False
            def __fspath__(self):
                return "inside.txt"
        return open(Innocent("/etc/passwd")).read()
    """,
    "lying_bytes_subclass": """
        class Innocent(bytes):
            def decode(self, *args, **kwargs):
                return "inside.txt"
        return open(Innocent(b"/etc/passwd")).read()
    """,
    "flipping_pathlike_for_sqlite": """
        import sqlite3
        class Flip:
            calls = 0
            def __fspath__(self):
                Flip.calls += 1
                return "inside.db" if Flip.calls % 2 else "/tmp/aw_escape_marker.db"
        sqlite3.connect(Flip()).execute("create table t(x)")
        return "connected"
    """,
    "directory_descriptor": f"""
        import os
        directory = os.open({STDLIB!r}, os.O_RDONLY)
        return os.open("os.py", os.O_WRONLY | os.O_APPEND, dir_fd=directory)
    """,
    "swap_hook_code": """
        import gc
        for obj in gc.get_objects():
            if getattr(obj, "__name__", "") == "hook":
                obj.__code__ = (lambda event, args: None).__code__
        return "hook replaced"
    """,
    "swap_function_defaults": """
        def victim(x=1):
            return x
        victim.__defaults__ = (2,)
        return victim()
    """,
    "forge_bytecode": """
        code = (lambda: 0).__code__
        return str(code.replace(co_code=b"\\x00\\x00"))
    """,
    "threads_outlive_the_call": """
        import threading, time
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        return "thread started"
    """,
}
REFUSALS = {
    "rebind_guard_globals": "os.system",
    "rebind_builtins": "/etc/passwd",
    "rebind_os_path": "/etc/passwd",
    "lying_str_subclass": "/etc/passwd",
    "lying_bytes_subclass": "/etc/passwd",
    "flipping_pathlike_for_sqlite": "opening database",
    "directory_descriptor": "directory",
    "swap_hook_code": "gc.get_objects",
    "swap_function_defaults": "__defaults__",
    "forge_bytecode": "code.__new__",
    "threads_outlive_the_call": "threads",
}


def _tool(name: str, body: str) -> tuple[dict, str, str]:
    source = f"def {name}(db):\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return simple_tool(name), "read", source + "\n"


@pytest.fixture(scope="module")
def escape_package(tmp_path_factory):
    root = tmp_path_factory.mktemp("escapes")
    tools = [_tool(name, body) for name, body in ESCAPES.items()]
    return load_package(build_sample_package(root, name="escapes", extra_tools=tools))


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1, call_timeout=2, kill_grace=1) as pool:
        yield pool


@pytest.mark.parametrize("tool", list(ESCAPES))
def test_escape_attempt_is_refused_and_the_episode_goes_on(pool, escape_package, tool):
    with pool.start_episode(escape_package) as episode:
        result = episode.call_tool(tool, {})
        assert not result.ok, f"{tool} got through: {result.result!r}"
        assert result.error_kind == "sandbox_violation", result
        assert REFUSALS[tool] in result.error
        after = episode.call_tool("get_book", {"book_id": 2})
        assert after.ok and after.result["title"] == "Dune Messiah", after
    assert not os.path.exists(MARKER)
    assert not os.path.exists("/tmp/aw_escape_marker.db")


def test_worker_left_with_a_thread_is_replaced_and_episodes_rebuilt(pool, escape_package):
    with pool.start_episode(escape_package) as episode:
        assert episode.call_tool("update_stock", {"book_id": 4, "stock": 42}).ok
        before = episode.slot.process.pid
        result = episode.call_tool("threads_outlive_the_call", {})
        assert result.error_kind == "sandbox_violation"
        assert episode.slot.process.pid != before
        assert episode.call_tool("get_book", {"book_id": 4}).result["stock"] == 42


def test_every_escape_was_recorded_against_the_guard_not_lost(pool, escape_package):
    """A tool that rebinds the guard's globals leaves the refusals of later tools intact."""
    with pool.start_episode(escape_package) as episode:
        assert episode.call_tool("rebind_guard_globals", {}).error_kind == "sandbox_violation"
        again = episode.call_tool("lying_str_subclass", {})
        assert again.error_kind == "sandbox_violation" and "/etc/passwd" in again.error


def test_the_hook_keeps_no_closure_cells_a_tool_could_rewrite(tmp_path):
    """Closure cells are writable (`cell.cell_contents = ...`) without any audit event;
    default arguments are not (`__defaults__` assignment is audited and refused)."""
    from environments.runtime.sandbox_guard import make_audit_hook

    hook = make_audit_hook([STDLIB], [str(tmp_path)], lambda message: None)
    functions, seen = [hook], []
    while functions:
        function = functions.pop()
        seen.append(function.__name__)
        assert function.__closure__ is None, f"{function.__name__} closes over variables"
        functions.extend(
            v for v in function.__defaults__ or () if callable(v) and hasattr(v, "__code__")
        )
    assert {"hook", "plain", "absolute", "under", "refuse", "database_allowed"} <= set(seen)


# -- Landlock: the kernel layer, exercised without the Python one -----------------------------

needs_landlock = pytest.mark.skipif(
    landlock.abi_version() < 1, reason="this kernel offers no Landlock"
)


def _confined(tmp_path: Path, body: str) -> dict:
    """Run `body` in a fresh Python with no capability, under Landlock, without the audit hook:
    what each `attempt` got, as JSON."""
    script = textwrap.dedent(
        f"""
        import json, os, socket, sys
        sys.path.insert(0, {str(Path(landlock.__file__).parent)!r})
        import landlock, sandbox_guard
        capabilities = sandbox_guard.drop_capabilities()
        abi = landlock.restrict({_python_roots()!r}, [{str(tmp_path / "work")!r}])
        seen = {{"abi": abi, "capabilities": capabilities}}
        def attempt(name, action):
            try:
                seen[name] = ("ok", repr(action()))
            except (OSError, ValueError) as exc:
                seen[name] = (type(exc).__name__, getattr(exc, "errno", None))
        """
    ) + textwrap.dedent(body)
    (tmp_path / "work").mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-I", "-c", script + "\nprint(json.dumps(seen))"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path / "work",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@needs_landlock
def test_landlock_refuses_files_programs_and_tcp_outside_the_worker(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    outside = tmp_path / "outside.txt"
    try:
        seen = _confined(
            tmp_path,
            f"""
            attempt("read_inside_python", lambda: len(open(os.__file__).read()) > 0)
            attempt("write_inside", lambda: open("scratch.txt", "w").write("fine"))
            attempt("read_etc", lambda: open("/etc/passwd").read())
            attempt("write_outside", lambda: open({str(outside)!r}, "w").write("x"))
            attempt("list_root", lambda: os.listdir("/"))
            attempt("execute", lambda: os.execv("/bin/true", ["/bin/true"]))
            attempt("tcp_connect", lambda: socket.create_connection(("127.0.0.1", {port}), 2))
            attempt("chroot", lambda: os.chroot("."))
            attempt("raise_limit", lambda: __import__("resource").setrlimit(
                __import__("resource").RLIMIT_NOFILE, (1 << 20, 1 << 20)))
            """,
        )
    finally:
        listener.close()
    assert seen["abi"] == landlock.abi_version() >= 1
    assert seen["read_inside_python"] == ["ok", "True"]
    assert seen["write_inside"] == ["ok", "4"]
    assert seen["capabilities"] == 0
    for refused in ("read_etc", "write_outside", "list_root", "execute", "chroot"):
        assert seen[refused][0] == "PermissionError", (refused, seen[refused])
    if seen["abi"] >= 4:
        assert seen["tcp_connect"][0] == "PermissionError", seen["tcp_connect"]
    assert seen["raise_limit"][0] in ("PermissionError", "ValueError"), seen["raise_limit"]
    assert not outside.exists()


@needs_landlock
def test_pool_workers_run_under_landlock_without_capabilities(pool):
    hello = pool.slots[0].process.hello
    assert hello["landlock_abi"] == landlock.abi_version()
    assert hello["capabilities"] == 0  # root or not, the worker holds no capability
