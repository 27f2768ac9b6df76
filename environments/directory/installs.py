"""Installing registry packages into a folder of the project: npm --prefix, or a venv for PyPI.
What the catalogue installs (the API directory, MCP server packages) stays confined there.

Two runs started at once (two web requests, two workers) may install into the same folder: each
install holds an exclusive lock on a file in that folder (fcntl.flock, released by the kernel
when its holder exits, even killed) and asks again, once it holds it, whether the package is
there, so the second waits for the first and then finds the package installed instead of
writing into a node_modules another npm is writing."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

INSTALL_TIMEOUT_SECONDS = 900.0
LOCK_FILE = ".aw-install.lock"
LOCK_POLL_SECONDS = 0.2


class InstallError(ValueError):
    """An install failed; the message names the package and why."""


@contextmanager
def install_lock(folder: Path, what: str, timeout: float) -> Iterator[None]:
    """Hold FOLDER/.aw-install.lock exclusively for the block, across processes; waits at most
    `timeout` seconds for another install there to end (an InstallError saying so after)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    deadline = time.monotonic() + timeout
    with open(path, "a+b") as handle:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise InstallError(
                        f"{what}: another install into {folder} still held {path} after "
                        f"{timeout:.0f}s; try again once it has ended"
                    ) from None
                time.sleep(LOCK_POLL_SECONDS)
        try:
            handle.truncate(0)
            handle.write(f"{os.getpid()} {what}\n".encode())  # who holds it, for a person
            handle.flush()
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def run_installer(command: list[str], what: str, timeout: float) -> None:
    try:
        done = subprocess.run(  # noqa: S603 - fixed installer command lines
            command, capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        raise InstallError(f"{what} failed: {(done.stderr or done.stdout).strip()[-800:]}")


def npm_install(
    prefix: Path,
    spec: str,
    timeout: float = INSTALL_TIMEOUT_SECONDS,
    installed: Callable[[], bool] = lambda: False,
) -> bool:
    """`npm install --prefix PREFIX SPEC` (the ordinary client, the public registry), one
    install into PREFIX at a time; none when `installed()` says, under the lock, that an
    install that held it before has put the package there. True when npm ran."""
    if shutil.which("npm") is None:
        raise InstallError(f"{spec}: npm is not installed (install Node.js and npm)")
    what = f"npm install {spec} into {prefix}"
    with install_lock(prefix, what, timeout):
        if installed():
            return False
        run_installer(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                       "--no-save", spec], what, timeout)  # fmt: skip
    return True


def pip_install_in_venv(
    venv: Path,
    spec: str,
    timeout: float = INSTALL_TIMEOUT_SECONDS,
    installed: Callable[[], bool] = lambda: False,
) -> bool:
    """A venv of its own at `venv` (made once) with `spec` pip-installed into it, one install
    into it at a time (the lock sits beside the venv); none when `installed()` says so under
    the lock. True when pip ran."""
    what = f"pip install {spec} into {venv}"
    with install_lock(venv.parent, what, timeout):
        if installed():
            return False
        python = venv / "bin" / "python"
        if not python.is_file():
            run_installer([sys.executable, "-m", "venv", str(venv)], f"a venv for {spec}", timeout)
        run_installer([str(python), "-m", "pip", "install", "--quiet", spec], what, timeout)
    return True
