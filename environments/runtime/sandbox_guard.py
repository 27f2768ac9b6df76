"""Confinement of a sandbox worker process, applied once at worker start, before any tool loads.

Layers, outermost first:
1. a fresh network namespace (`unshare(CLONE_NEWNET)`, where the kernel allows it) and, when
   started as root, a drop to an unprivileged user, so the kernel itself refuses the network,
   forks (RLIMIT_NPROC) and file permissions;
2. resource limits: address space, file size, no child processes, no core dumps, lifetime CPU;
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
import sys

NOBODY = 65534
CLONE_NEWNET = 0x40000000

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
    }
)
PATH_COPY_EVENTS = frozenset(
    {"shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move"}
)
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


def install_audit_hook(read_roots: list[str], write_roots: list[str], violations: list) -> None:
    """Refuse dangerous operations for the rest of the worker's life; record each refusal."""
    read_roots = tuple(_root(r) for r in read_roots + write_roots)
    write_roots = tuple(_root(r) for r in write_roots)
    getcwd, join, normpath, fsdecode = os.getcwd, os.path.join, os.path.normpath, os.fsdecode

    def absolute(path: object) -> str | None:
        if isinstance(path, int):
            return None
        try:
            return normpath(join(getcwd(), fsdecode(path)))
        except (TypeError, ValueError):
            return None

    def under(path: str | None, roots: tuple[str, ...]) -> bool:
        return path is not None and any(path == r[:-1] or path.startswith(r) for r in roots)

    def refuse(message: str) -> None:
        violations.append(message)
        raise SandboxViolation(message)

    def hook(event: str, args: tuple) -> None:
        if event in REFUSED_EVENTS:
            refuse(f"{event} is not allowed in the sandbox")
        elif event == "import":
            if args[0].partition(".")[0] in DENIED_MODULES:
                refuse(f"importing {args[0]} is not allowed in the sandbox")
        elif event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & WRITE_FLAGS
            )
            target = absolute(path)
            if writing and not under(target, write_roots):
                refuse(f"writing {path!r} is not allowed: only the episode directory is writable")
            if not writing and not under(target, read_roots):
                refuse(f"reading {path!r} is not allowed in the sandbox")
        elif event in PATH_READ_EVENTS:
            if args and not under(absolute(args[0]), read_roots):
                refuse(f"{event}({args[0]!r}) is not allowed in the sandbox")
        elif event in PATH_WRITE_EVENTS or event in ("os.rename", "os.replace"):
            for path in args[:2] if event in ("os.rename", "os.replace") else args[:1]:
                if not under(absolute(path), write_roots):
                    refuse(f"{event}({path!r}) is not allowed outside the episode directory")
        elif event in PATH_COPY_EVENTS:
            if not under(absolute(args[0]), read_roots):
                refuse(f"{event}: reading {args[0]!r} is not allowed in the sandbox")
            if not under(absolute(args[1]), write_roots):
                refuse(f"{event}: writing {args[1]!r} is not allowed outside the episode dir")
        elif event == "sqlite3.connect":
            if not _database_allowed(args[0], absolute, under, read_roots, write_roots):
                refuse(f"opening database {args[0]!r} is not allowed in the sandbox")

    sys.addaudithook(hook)


def forget_denied_modules() -> None:
    """Drop already-imported denied modules so importing them again hits the audit hook."""
    for name in list(sys.modules):
        if name.partition(".")[0] in DENIED_MODULES - {"socket", "_socket"}:
            del sys.modules[name]


def _root(path: str) -> str:
    return os.path.realpath(path).rstrip("/") + "/"


def _database_allowed(database, absolute, under, read_roots, write_roots) -> bool:
    name = os.fsdecode(database) if not isinstance(database, str) else database
    if name in ("", ":memory:"):
        return True
    if name.startswith("file:"):
        path, _, query = name[len("file:") :].partition("?")
        if query == "mode=ro":
            return under(absolute(path), read_roots)
        if query in ("mode=memory", "") and path.startswith(":memory:"):
            return True
        return query in ("", "mode=rw", "mode=rwc") and under(absolute(path), write_roots)
    return under(absolute(name), write_roots)
