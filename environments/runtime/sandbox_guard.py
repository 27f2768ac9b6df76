"""Confinement of a sandbox worker process, applied once at worker start, before any tool loads.

Layers, outermost first:
1. a fresh network namespace (`unshare(CLONE_NEWNET)`, where the kernel allows it) and, when
   started as root, a drop to an unprivileged user, so the kernel itself refuses the network,
   forks (RLIMIT_NPROC) and file permissions; a worker that must stay root gives up every
   capability instead;
2. resource limits: address space, file size, no child processes, no core dumps, lifetime CPU;
   Landlock (landlock.py), where the kernel has it, bounds files, program execution and TCP;
3. a refusal in Python that holds whatever the kernel allows: `socket` is patched, and an audit
   hook (`sys.addaudithook`, which cannot be removed) refuses sockets, process creation, ctypes,
   imports of dangerous modules, writes outside the worker directory and reads outside the
   Python installation, the package files and the worker directory (so /etc, /proc, $HOME).

This is defence in depth for generated tool code, not a boundary against a determined attacker
with arbitrary code execution; deployments running hostile code use the Docker backend.
Standard library only: it runs inside the worker.
"""

from __future__ import annotations

import os
import resource
import signal
import stat
import sys
from collections.abc import Callable

NOBODY = 65534
CLONE_NEWNET = 0x40000000
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522

DENIED_MODULES = frozenset(
    {
        "socket",
        "_socket",
        "ssl",
        "_ssl",
        "subprocess",
        "_posixsubprocess",
        "ctypes",
        "_ctypes",
        "multiprocessing",
        "_multiprocessing",
        "pty",
        "resource",
        "fcntl",
        "mmap",
    }
)

REFUSED_EVENTS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.exec",
        "os.spawn",
        "os.system",
        "os.kill",
        "os.killpg",
        "os.startfile",
        "os.symlink",
        "os.link",
        "os.chdir",
        "os.putenv",
        "os.unsetenv",
        "os.setxattr",
        "subprocess.Popen",
        "pty.spawn",
        "socket.__new__",
        "socket.connect",
        "socket.bind",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.sendto",
        "socket.sendmsg",
        "ctypes.dlopen",
        "ctypes.dlsym",
        "ctypes.cdata",
        "ctypes.addressof",
        "resource.setrlimit",
        "resource.prlimit",
        "signal.pthread_kill",
        "sys.addaudithook",
        "sys.setprofile",
        "sys.settrace",
        "sqlite3.enable_load_extension",
        "sqlite3.load_extension",
        "_thread.start_new_thread",
        "webbrowser.open",
        # Reaching or forging interpreter internals: the hook function, raw memory, bytecode.
        "ctypes.call_function",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "code.__new__",
    }
)

PATH_READ_EVENTS = frozenset({"os.listdir", "os.scandir", "glob.glob", "glob.glob/2"})
PATH_WRITE_EVENTS = frozenset(
    {
        "os.remove",
        "os.rmdir",
        "os.mkdir",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.utime",
        "shutil.rmtree",
        "os.rename",
        "os.replace",
    }
)
PATH_COPY_EVENTS = frozenset(
    {"shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move"}
)
# Raised by shutil and glob with the caller's object, before they call os functions that raise
# their own events with the converted path.
PYTHON_LEVEL_EVENTS = PATH_COPY_EVENTS | {"glob.glob", "glob.glob/2", "shutil.rmtree"}
FROZEN_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
FS_ENCODING = sys.getfilesystemencoding()
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class SandboxViolation(RuntimeError):
    """An operation the sandbox refuses (network, processes, files outside the episode dir)."""


class CpuBudgetExceeded(BaseException):
    """The worker used up its lifetime CPU budget (RLIMIT_CPU); it will be replaced."""


def isolate_network() -> bool:
    """Enter a new, empty network namespace; False where the kernel does not allow it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        return False


def drop_capabilities() -> int:
    """Give up every capability (bounding, ambient, effective, permitted, inheritable), so a
    worker that stays root (its Python is not readable by `nobody`) cannot mount, load modules,
    open files by handle, trace other processes or undo its limits. Returns CapEff afterwards
    (0 when it worked; -1 where the kernel refused)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        for capability in range(last + 1):
            libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
        header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
        nothing = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable} words
        if libc.capset(header, nothing) != 0:
            return -1
    except (OSError, AttributeError, ValueError):
        return -1
    return effective_capabilities()


def effective_capabilities() -> int:
    """This process's CapEff bit set from /proc/self/status (-1 where it cannot be read)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return -1


def drop_privileges() -> bool:
    """Become `nobody` when started as root, so file permissions and RLIMIT_NPROC apply."""
    if os.geteuid() != 0:
        return False
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    return True


def apply_limits(memory_mb: int, file_size_mb: int, cpu_budget_s: int) -> None:
    """Resource limits for the whole worker; soft == hard so tool code cannot raise them."""
    megabyte = 1024 * 1024
    limits = {
        resource.RLIMIT_AS: memory_mb * megabyte,
        resource.RLIMIT_FSIZE: file_size_mb * megabyte,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_NPROC: 0,
        resource.RLIMIT_CPU: cpu_budget_s,
    }
    for limit, value in limits.items():
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-big write fails with EFBIG instead


def patch_socket() -> None:
    """Make socket creation fail even before the audit hook sees it."""
    import socket

    def refused(*args: object, **kwargs: object) -> None:
        raise SandboxViolation("network access is not allowed in the sandbox")

    class RefusedSocket(socket.socket):
        def __init__(self, *args: object, **kwargs: object) -> None:
            refused()

    socket.socket = RefusedSocket  # type: ignore[misc]
    for name in ("create_connection", "create_server", "socketpair", "fromfd", "getaddrinfo"):
        setattr(socket, name, refused)


def install_audit_hook(
    read_roots: list[str],
    write_roots: list[str],
    violations: list,
    scope: list[str] | None = None,
    private_roots: list[str] = (),  # type: ignore[assignment]
) -> None:
    """Refuse dangerous operations for the rest of the worker's life; record each refusal."""
    sys.addaudithook(
        make_audit_hook(read_roots, write_roots, violations.append, scope, private_roots)
    )


def make_audit_hook(
    read_roots: list[str],
    write_roots: list[str],
    record: Callable[[str], object],
    scope: list[str] | None = None,
    private_roots: list[str] = (),  # type: ignore[assignment]
) -> Callable[[str, tuple], None]:
    """The hook and its helpers keep everything they use in default arguments, not closures.

    Tool code shares this interpreter: it can rebind module globals (this module's event sets),
    builtins (`any`, `isinstance`) and `os`/`posixpath` functions. Defaults are captured once,
    and rebinding a function's `__defaults__` or `__code__` is itself an audited event that the
    hook refuses. Paths are read as exact str the way C reads them (never through a subclass's
    methods or `__fspath__`, which could answer differently the second time), and the hook never
    runs code that a tool's objects define (it could read the hook's frame from there).

    `scope` is a one-item list the worker sets to an episode directory while that episode's
    tool code runs (a folder-of-collections episode), "" otherwise: then nothing under the
    `private_roots` (the worker directory with the other episodes, the package files) is
    readable or writable outside that directory.
    """
    reads = tuple(_root(r) for r in [*read_roots, *write_roots])
    writes = tuple(_root(r) for r in write_roots)
    private = tuple(_root(r) for r in private_roots)
    scope = scope if scope is not None else [""]

    def plain(path, _type=type, _sub=issubclass, _str=str, _bytes=bytes, _enc=FS_ENCODING):
        if _sub(_type(path), _str):
            return _str.__str__(path)
        if _sub(_type(path), _bytes):
            return _bytes.decode(path, _enc, "surrogateescape")
        return None  # a file descriptor, a PathLike or anything else: no trusted text

    def absolute(path, _plain=plain, _getcwd=os.getcwd):
        text = _plain(path)
        if text is None or "\x00" in text:
            return None
        if not text.startswith("/"):
            text = _getcwd() + "/" + text
        parts: list[str] = []
        for part in text.split("/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part and part != ".":
                parts.append(part)
        return "/" + "/".join(parts)

    def under(path, roots):
        if path is None:
            return False
        for root in roots:
            if path == root[:-1] or path.startswith(root):
                return True
        return False

    def is_directory(path, _stat=os.stat, _isdir=stat.S_ISDIR, _oserror=OSError):
        try:
            return _isdir(_stat(path).st_mode)
        except _oserror:
            return False

    def refuse(message, _record=record, _violation=SandboxViolation):
        _record(message)
        raise _violation(message)

    def outside_scope(path, _scope=scope, _private=private, _under=under):
        """Whether `path` is in the worker's private files but not the running episode's."""
        current = _scope[0]
        if not current or path is None or not _under(path, _private):
            return False
        return not _under(path, (current.rstrip("/") + "/",))

    def database_allowed(
        database, _plain=plain, _absolute=absolute, _under=under, _reads=reads, _writes=writes
    ):
        name = _plain(database)
        if name is None:
            return False
        if name in ("", ":memory:"):
            return True
        if not name.startswith("file:"):
            return _under(_absolute(name), _writes)
        path, _, query = name[len("file:") :].partition("?")
        if query == "mode=ro":
            return _under(_absolute(path), _reads)
        if query in ("mode=memory", "") and path.startswith(":memory:"):
            return True
        return query in ("", "mode=rw", "mode=rwc") and _under(_absolute(path), _writes)

    def hook(
        event,
        args,
        _refused=REFUSED_EVENTS,
        _denied=DENIED_MODULES,
        _read_events=PATH_READ_EVENTS,
        _write_events=PATH_WRITE_EVENTS,
        _copy_events=PATH_COPY_EVENTS,
        _python_level=PYTHON_LEVEL_EVENTS,
        _frozen=FROZEN_ATTRIBUTES,
        _write_flags=WRITE_FLAGS,
        _reads=reads,
        _writes=writes,
        _plain=plain,
        _absolute=absolute,
        _under=under,
        _is_directory=is_directory,
        _refuse=refuse,
        _database_allowed=database_allowed,
        _outside_scope=outside_scope,
        _type=type,
        _str=str,
        _int=int,
    ):
        if event in _refused:
            _refuse(f"{event} is not allowed in the sandbox")
        elif event == "object.__setattr__":
            if args[1] in _frozen:
                _refuse(f"setting a function's {args[1]} is not allowed in the sandbox")
        elif event == "import":
            name = _plain(args[0]) or ""
            if name.partition(".")[0] in _denied:
                _refuse(f"importing {name} is not allowed in the sandbox")
        elif event == "open":
            path, mode, flags = args
            writing = (_type(flags) is _int and flags & _write_flags) or (
                _type(mode) is _str and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)
            )
            target = _absolute(path)
            shown = _plain(path) if target is not None else "<not a str or bytes path>"
            if writing and not _under(target, _writes):
                _refuse(f"writing {shown!r} is not allowed: only the episode directory is writable")
            if not writing and not _under(target, _reads):
                _refuse(f"reading {shown!r} is not allowed in the sandbox")
            if _outside_scope(target):
                _refuse(f"{shown!r} is outside this episode's files: a tool sees only its own")
            if _is_directory(target) and not _under(target, _writes):
                # A directory descriptor would let dir_fd= calls resolve names out of sight.
                _refuse(f"opening the directory {shown!r} is not allowed in the sandbox")
        elif event in _read_events or event in _write_events or event in _copy_events:
            if event in _python_level and _plain(args[0]) is None:
                return  # shutil and glob hand the object on; the os-level events check it
            roots = _reads if event in _read_events else _writes
            paths = args[:2] if event in ("os.rename", "os.replace") else args[:1]
            if event in _copy_events:
                if not _under(_absolute(args[0]), _reads) or _outside_scope(_absolute(args[0])):
                    _refuse(f"{event}: reading {_plain(args[0])!r} is not allowed in the sandbox")
                paths = args[1:2]
            where = "in the sandbox" if event in _read_events else "outside the episode directory"
            for path in paths:
                if _outside_scope(_absolute(path)):
                    _refuse(f"{event}: outside this episode's files: a tool sees only its own")
                if not _under(_absolute(path), roots):
                    shown = (
                        _plain(path) if _plain(path) is not None else "<not a str or bytes path>"
                    )
                    _refuse(f"{event}({shown!r}) is not allowed {where}")
        elif event == "sqlite3.connect":
            if not _database_allowed(args[0]):
                _refuse(f"opening database {_plain(args[0])!r} is not allowed in the sandbox")

    return hook


def forget_denied_modules() -> None:
    """Drop already-imported denied modules so importing them again hits the audit hook."""
    for name in list(sys.modules):
        if name.partition(".")[0] in DENIED_MODULES - {"socket", "_socket"}:
            del sys.modules[name]


def _root(path: str) -> str:
    return os.path.realpath(path).rstrip("/") + "/"
