"""Installing registry packages into a folder of the project: npm --prefix, or a venv for PyPI.
What the catalogue installs (the API directory, MCP server packages) stays confined there."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

INSTALL_TIMEOUT_SECONDS = 900.0


class InstallError(ValueError):
    """An install failed; the message names the package and why."""


def run_installer(command: list[str], what: str, timeout: float) -> None:
    try:
        done = subprocess.run(  # noqa: S603 - fixed installer command lines
            command, capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        raise InstallError(f"{what} failed: {(done.stderr or done.stdout).strip()[-800:]}")


def npm_install(prefix: Path, spec: str, timeout: float = INSTALL_TIMEOUT_SECONDS) -> None:
    """`npm install --prefix PREFIX SPEC` (the ordinary client, the public registry)."""
    if shutil.which("npm") is None:
        raise InstallError(f"{spec}: npm is not installed (install Node.js and npm)")
    prefix.mkdir(parents=True, exist_ok=True)
    run_installer(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                   "--no-save", spec], f"npm install {spec} into {prefix}", timeout)  # fmt: skip


def pip_install_in_venv(venv: Path, spec: str, timeout: float = INSTALL_TIMEOUT_SECONDS) -> None:
    """A venv of its own at `venv` (made once) with `spec` pip-installed into it."""
    python = venv / "bin" / "python"
    if not python.is_file():
        venv.parent.mkdir(parents=True, exist_ok=True)
        run_installer([sys.executable, "-m", "venv", str(venv)], f"a venv for {spec}", timeout)
    run_installer([str(python), "-m", "pip", "install", "--quiet", spec],
                  f"pip install {spec} into {venv}", timeout)  # fmt: skip
