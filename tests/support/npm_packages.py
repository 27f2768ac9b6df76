"""Real npm packages the theme tests use: the reference MCP servers and OpenAPI examples.

`npm_package(name)` installs the pinned packages once into var/npm/ (npm from the registry, the
ordinary client) and returns the package directory, or None when npm is missing or the install
fails (the tests then skip, saying why). `python -m tests.support.npm_packages` installs them
ahead of a test run (`./dev setup` does).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "var" / "npm"
PACKAGES = {
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@readme/oas-examples": "8.2.2",
}
_FAILED: list[str] = []


def install(timeout: float = 300.0) -> str | None:
    """Install every pinned package; None on success, else why not."""
    missing = [n for n in PACKAGES if not (ROOT / "node_modules" / n / "package.json").is_file()]
    if not missing:
        return None
    if _FAILED:
        return _FAILED[0]
    if shutil.which("npm") is None or shutil.which("node") is None:
        _FAILED.append("node/npm are not installed")
        return _FAILED[0]
    ROOT.mkdir(parents=True, exist_ok=True)
    specs = [f"{n}@{v}" for n, v in PACKAGES.items()]
    try:
        done = subprocess.run(  # noqa: S603
            [
                "npm",
                "install",
                "--prefix",
                str(ROOT),
                "--no-audit",
                "--no-fund",
                "--no-save",
                *specs,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        _FAILED.append(f"npm install failed: {exc}")
        return _FAILED[0]
    if done.returncode != 0:
        _FAILED.append(f"npm install failed: {done.stderr[-500:]}")
        return _FAILED[0]
    return None


def npm_package(name: str) -> Path | None:
    if install() is not None:
        return None
    return ROOT / "node_modules" / name


def npm_bin(name: str) -> Path | None:
    if install() is not None:
        return None
    path = ROOT / "node_modules" / ".bin" / name
    return path if path.exists() else None


if __name__ == "__main__":
    problem = install()
    print(problem or f"npm packages ready under {ROOT}")
    sys.exit(0)
