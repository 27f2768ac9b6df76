"""MCP server packages from npm or PyPI as catalogue items: each installed into its own
confined prefix under the project (npm --prefix, or a venv for PyPI), started over stdio and
listed offline (environments.mcp_import), then built as a theme like a directory document.

The list is a text file, one package a line, `#` starts a comment:

    npm @modelcontextprotocol/server-memory@2026.8.31
    npm @modelcontextprotocol/server-filesystem@2026.8.31 -- /tmp
    pypi mcp-server-time==2025.9.25

(what follows `--` is passed to the server), or JSON: [{"registry": "npm", "package": "...",
"args": ["..."]}, ...]. A pinned version keeps the item's identity (its key and the hash of
its line) stable, so a later run never builds the same package twice.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.directory.installs import (
    INSTALL_TIMEOUT_SECONDS,
    InstallError,
    npm_install,
    pip_install_in_venv,
)

REGISTRIES = ("npm", "pypi")
KEY_PREFIX = "mcp/"
# a name and version from the registry: no path, URL or option ("./x", "git+https:", "-e")
PACKAGE_SPEC = re.compile(r"@?[A-Za-z0-9][A-Za-z0-9._/=<>!~^,\[\]@-]*")


class PackageError(ValueError):
    """A package cannot be listed, installed or started; the message says which and why."""


@dataclass(frozen=True)
class MCPPackage:
    registry: str  # npm | pypi
    package: str  # the install spec: "@scope/name@1.2.3", "name==1.2.3"
    args: tuple[str, ...] = ()  # passed to the server after its command

    @property
    def key(self) -> str:
        return f"{KEY_PREFIX}{self.registry}/{self.package}"

    @property
    def sha256(self) -> str:
        line = json.dumps([self.registry, self.package, list(self.args)])
        return hashlib.sha256(line.encode()).hexdigest()

    @property
    def name(self) -> str:
        """The package's name without its version: "@scope/name", "name"."""
        if self.registry == "npm":
            return re.sub(r"(?<=.)@[^/@]*$", "", self.package)
        return re.split(r"[<>=!~\[ ;]", self.package, maxsplit=1)[0]

    def as_dict(self) -> dict[str, Any]:
        return {"registry": self.registry, "package": self.package, "args": list(self.args)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MCPPackage:
        registry = str(data.get("registry", "")).strip().lower()
        package = str(data.get("package", "")).strip()
        if registry not in REGISTRIES:
            raise PackageError(f"{package or data}: registry must be npm or pypi, not {registry!r}")
        if not package or package.startswith("-") or len(package) > 200:
            raise PackageError(f"{data}: give the package's name (and version)")
        if not PACKAGE_SPEC.fullmatch(package) or ".." in package:
            raise PackageError(f"{package!r} is not a registry package name (and version)")
        if "/" in package and not (registry == "npm" and package.startswith("@")):
            raise PackageError(f"{package!r}: only a scoped npm package has a '/' in its name")
        args = data.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise PackageError(f"{package}: args must be a list of strings")
        return cls(registry, package, tuple(args))


def read_package_list(path: Path) -> list[MCPPackage]:
    """The packages a list file names (text or JSON), refusing the whole file on a bad line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PackageError(f"{path}: cannot read the package list ({exc})") from exc
    if text.lstrip().startswith("["):
        try:
            entries = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PackageError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
        if not all(isinstance(e, dict) for e in entries):
            raise PackageError(f"{path}: a JSON list of {{registry, package, args}} objects")
        return [MCPPackage.from_dict(e) for e in entries]
    packages = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        words, _, rest = line.partition(" -- ")
        parts = words.split()
        if len(parts) != 2:
            raise PackageError(f"{path}:{number}: write 'npm|pypi PACKAGE [-- ARGS]'")
        try:
            args = shlex.split(rest)
        except ValueError as exc:
            raise PackageError(f"{path}:{number}: {exc}") from exc
        packages.append(
            MCPPackage.from_dict({"registry": parts[0], "package": parts[1], "args": args})
        )
    if not packages:
        raise PackageError(f"{path} names no package")
    return packages


def packages_root() -> Path:
    from django.conf import settings

    return Path(settings.STORAGE_ROOT) / "mcp-packages"


def _folder(root: Path, package: MCPPackage) -> Path:
    slug = re.sub(r"[^a-zA-Z0-9.]+", "_", package.package).strip("_")[:80]
    return root / package.registry / slug


def install(package: MCPPackage, root: Path, timeout: float = INSTALL_TIMEOUT_SECONDS) -> list[str]:
    """Install the package into its own folder under `root` (once); the stdio command."""
    folder = _folder(root, package)
    try:
        if package.registry == "npm":
            manifest = folder / "node_modules" / package.name / "package.json"
            if not manifest.is_file():
                npm_install(folder, package.package, timeout, installed=manifest.is_file)
            return ["node", str(npm_entry(manifest))]
        venv = folder / "venv"
        script = console_script(venv, package.name)
        if script is None:
            pip_install_in_venv(
                venv,
                package.package,
                timeout,
                installed=lambda: console_script(venv, package.name) is not None,
            )
            script = console_script(venv, package.name)
    except InstallError as exc:
        raise PackageError(str(exc)) from exc
    if script is None:
        raise PackageError(f"{package.package} installs no command to start its server")
    return [str(script)]


def npm_entry(manifest: Path) -> Path:
    """The file an npm package's `bin` names (the one named like the package when several)."""
    try:
        data = json.loads(manifest.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise PackageError(f"{manifest}: cannot read the package's manifest ({exc})") from exc
    binary = data.get("bin")
    if isinstance(binary, dict):
        short = str(data.get("name", "")).split("/")[-1]
        binary = binary.get(short) or (next(iter(binary.values())) if len(binary) == 1 else None)
    if not isinstance(binary, str):
        raise PackageError(f"{data.get('name')}: the package names no single command (bin)")
    return manifest.parent / binary


def console_script(venv: Path, name: str) -> Path | None:
    """The venv's command for the distribution `name` (normalised as pip does)."""
    normal = re.sub(r"[-_.]+", "-", name).lower()
    scripts = venv / "bin"
    for candidate in (normal, normal.replace("-", "_")):
        if (scripts / candidate).is_file():
            return scripts / candidate
    return None


def package_theme(package: MCPPackage, root: Path, timeout: float = 60.0) -> dict[str, Any]:
    """Install, start and list the server's tools: the theme an MCP build reads."""
    from environments.mcp_import import MCPImportError, import_mcp_server

    command = install(package, root)
    try:
        theme = import_mcp_server([*command, *package.args], timeout=timeout)
    except MCPImportError as exc:
        raise PackageError(f"{package.package}: {exc}") from exc
    theme["provenance"] = {**theme["provenance"], "package": package.as_dict()}
    return theme
