"""Kernel-enforced file and TCP boundary for a sandbox worker (Linux Landlock, 5.13+).

The audit hook in sandbox_guard refuses in Python; code that gets past Python (a CPython bug, a
crafted code object) still meets this layer. Landlock needs no privileges, holds for root too,
and is inherited by any child process. The worker may read its read roots, read and write its
own directory, execute nothing, open no TCP connection, bind no TCP port and (ABI 6+) signal
no process or abstract UNIX socket outside itself. Standard library only: it runs inside the
worker, before any tool code loads, and imports ctypes only inside its functions so that no
module attribute hands ctypes to tool code afterwards.
"""

from __future__ import annotations

import os
import struct
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # x86_64 and arm64 alike
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

FILE_ONLY_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ_RIGHTS = READ_FILE | READ_DIR
WRITE_RIGHTS = (
    READ_RIGHTS | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | REFER | TRUNCATE
)


class LandlockUnavailable(OSError):
    """The kernel (or a container's seccomp profile) does not offer Landlock."""


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    if not sys.platform.startswith("linux"):
        return 0  # the syscall numbers below mean other things elsewhere
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(
        SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION)
    )
    return max(0, version)


def handled_rights(abi: int) -> tuple[int, int, int]:
    """(file-system rights, TCP rights, scopes) this ABI can restrict: all of them."""
    fs = (MAKE_SYM << 1) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        fs |= REFER
    if abi >= 3:
        fs |= TRUNCATE
    if abi >= 5:
        fs |= IOCTL_DEV
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    return fs, net, scoped


def restrict(read_roots: list[str], write_roots: list[str]) -> int:
    """Confine this process (and its future children) for good; returns the ABI version used.

    Raises LandlockUnavailable when the kernel cannot do it; nothing is restricted then.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    abi = abi_version()
    if abi < 1:
        raise LandlockUnavailable("Landlock is not available in this kernel")
    fs, net, scoped = handled_rights(abi)
    if abi >= 6:
        attr = struct.pack("=QQQ", fs, net, scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", fs, net)
    else:
        attr = struct.pack("=Q", fs)
    ruleset = libc.syscall(
        SYS_CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        raise LandlockUnavailable(os.strerror(ctypes.get_errno()))
    try:
        for root in read_roots:
            _allow(libc, ruleset, root, READ_RIGHTS & fs)
        for root in write_roots:
            _allow(libc, ruleset, root, WRITE_RIGHTS & fs)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise LandlockUnavailable(f"no_new_privs: {os.strerror(ctypes.get_errno())}")
        if libc.syscall(SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            raise LandlockUnavailable(f"restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return abi


def _allow(libc: object, ruleset: int, path: str, rights: int) -> None:
    """Grant `rights` beneath `path`; a missing path is skipped (nothing to grant there)."""
    import ctypes

    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not os.path.isdir(path):
            rights &= FILE_ONLY_RIGHTS
        rule = struct.pack("=Qi", rights, fd)  # struct landlock_path_beneath_attr is packed
        if libc.syscall(
            SYS_ADD_RULE,
            ruleset,
            ctypes.c_uint32(RULE_PATH_BENEATH),
            ctypes.c_char_p(rule),
            ctypes.c_uint32(0),
        ):
            raise LandlockUnavailable(f"add_rule {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
