"""One environment package on disk: load it (validating every part) and publish a new one.

The layout and the manifest fields are fixed by docs/contracts.md. Loading never imports the
package's Python files: tools.py and tool_tests.py are untrusted code that only ever runs in a
sandbox worker, so here they are parsed with `ast` only.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from environments.json_schemas import schema_error
from environments.python_source import parse_python, python_name

PACKAGE_FILES = ("manifest.json", "state.sqlite", "tools.py", "tool_tests.py", "provenance.json")
# A package whose state is a folder of JSON collections (manifest "state": {"backend": ...}):
# collections/<name>.json, and the released code of each tool unmodified in tools/<function>.py.
COLLECTION_BACKEND = "json_collections"
COLLECTION_PACKAGE_FILES = ("manifest.json", "provenance.json")
COLLECTION_PACKAGE_DIRS = ("collections", "tools")
MANIFEST_KEYS = ("name", "version", "title", "description", "category", "tools", "tool_kinds")
CATEGORY_LEVELS = ("primary", "secondary", "tertiary")
TOOL_KINDS = ("read", "write")
PROVENANCE_KEYS = ("table", "source", "kind", "detail")
# OpenAI / MCP function names; the code of `get-stations` is `def get_stations` (python_name)
TOOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


class PackageError(ValueError):
    """The package on disk does not follow the contract; the message names the broken part."""


@dataclass(frozen=True)
class EnvironmentPackage:
    """A validated environment version. Immutable: a change makes a new version."""

    path: Path
    manifest: dict[str, Any]
    tools_source: str
    tests_source: str
    provenance: list[dict[str, Any]]
    content_hash: str
    tool_tests: dict[str, list[str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def version(self) -> int:
        return self.manifest["version"]

    @property
    def state_path(self) -> Path:
        return self.path / "state.sqlite"

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI-style tool schemas, in manifest order."""
        return self.manifest["tools"]

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools]

    def tool_schema(self, name: str) -> dict[str, Any] | None:
        """The JSON schema of a tool's parameters, or None when the tool does not exist."""
        for tool in self.tools:
            if tool["function"]["name"] == name:
                return tool["function"]["parameters"]
        return None

    def tool_kind(self, name: str) -> str:
        return self.manifest["tool_kinds"].get(name, "read")

    @property
    def state_backend(self) -> str:
        """ "sqlite" (state.sqlite) or "json_collections" (a folder of JSON collections)."""
        return (self.manifest.get("state") or {}).get("backend", "sqlite")

    @property
    def collections_path(self) -> Path:
        return self.path / "collections"


def load_package(path: str | os.PathLike[str]) -> EnvironmentPackage:
    """Read and validate a package directory; raise PackageError naming what is malformed."""
    root = Path(path)
    if not root.is_dir():
        raise PackageError(f"package directory {root} does not exist")
    if (root / "manifest.json").is_file() and _holds_collections(
        _read_json(root / "manifest.json")
    ):
        return _load_collection_package(root)
    for filename in PACKAGE_FILES:
        if not (root / filename).is_file():
            raise PackageError(f"{root}: missing file {filename}")

    manifest = _read_json(root / "manifest.json")
    provenance = _read_json(root / "provenance.json")
    tools_source = _read_text(root / "tools.py")
    tests_source = _read_text(root / "tool_tests.py")

    _check_manifest(manifest)
    tool_functions = _top_level_functions(tools_source, "tools.py")
    for name in manifest["tool_kinds"]:
        if name not in {t["function"]["name"] for t in manifest["tools"]}:
            raise PackageError(f"manifest.json: tool_kinds names {name!r}, which is not a tool")
    by_function: dict[str, str] = {}
    for tool in manifest["tools"]:
        name = tool["function"]["name"]
        function = python_name(name)
        if function in by_function:
            raise PackageError(
                f"manifest.json: tools {by_function[function]!r} and {name!r} both need "
                f"`def {function}`"
            )
        by_function[function] = name
        if function not in tool_functions:
            raise PackageError(f"tools.py: tool {name!r} from manifest.json has no function")
        if not tool_functions[function]:
            raise PackageError(f"tools.py: function {function!r} must take `db` as first parameter")
    tool_tests = {
        by_function.get(function, function): tests
        for function, tests in _tool_tests(tests_source, set(tool_functions)).items()
    }
    _check_state(root / "state.sqlite", manifest.get("tables"))
    _check_provenance(provenance)

    return EnvironmentPackage(
        path=root.resolve(),
        manifest=manifest,
        tools_source=tools_source,
        tests_source=tests_source,
        provenance=provenance,
        content_hash=content_hash(root),
        tool_tests=tool_tests,
    )


def _holds_collections(manifest: Any) -> bool:
    state = manifest.get("state") if isinstance(manifest, dict) else None
    return isinstance(state, dict) and state.get("backend") == COLLECTION_BACKEND


def _load_collection_package(root: Path) -> EnvironmentPackage:
    """A package of JSON collections: its tools' code is the released code, one file each, and
    runs only in the sandbox (parsed here, never imported)."""
    for filename in COLLECTION_PACKAGE_FILES:
        if not (root / filename).is_file():
            raise PackageError(f"{root}: missing file {filename}")
    for folder in COLLECTION_PACKAGE_DIRS:
        if not (root / folder).is_dir():
            raise PackageError(f"{root}: missing folder {folder}/")
    manifest = _read_json(root / "manifest.json")
    provenance = _read_json(root / "provenance.json")
    _check_manifest(manifest)
    names = {t["function"]["name"] for t in manifest["tools"]}
    for name in manifest["tool_kinds"]:
        if name not in names:
            raise PackageError(f"manifest.json: tool_kinds names {name!r}, which is not a tool")
    sources = []
    for tool in manifest["tools"]:
        name = tool["function"]["name"]
        filename = f"tools/{python_name(name)}.py"
        if not (root / filename).is_file():
            raise PackageError(f"{filename}: missing, the code of tool {name!r}")
        source = _read_text(root / filename)
        if python_name(name) not in _top_level_functions(source, filename):
            raise PackageError(f"{filename}: defines no function {python_name(name)}()")
        sources.append(source.rstrip() + "\n")
    collections = sorted(p.name for p in (root / "collections").glob("*.json"))
    if not collections:
        raise PackageError("collections/: holds no JSON collection")
    for name in manifest["state"].get("collections") or {}:
        if f"{name}.json" not in collections:
            raise PackageError(f"manifest.json: collection {name!r} is not in collections/")
    _check_provenance(provenance)
    return EnvironmentPackage(
        path=root.resolve(),
        manifest=manifest,
        tools_source="\n\n".join(sources),  # for reading (the console, the registry)
        tests_source="",
        provenance=provenance,
        content_hash=content_hash(root),
    )


def content_hash(path: str | os.PathLike[str]) -> str:
    """sha256 over every file of the package (relative names and bytes), in sorted order."""
    root = Path(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def write_package(
    root: str | os.PathLike[str],
    manifest: dict[str, Any],
    state_db_path: str | os.PathLike[str],
    tools_source: str,
    tests_source: str,
    provenance: list[dict[str, Any]],
) -> Path:
    """Publish a package at <root>/<name>/v<version>/ and return that path.

    The files are written to a temporary sibling directory, validated with load_package, then
    renamed into place, so a reader never sees a half-written version. An existing version is
    never overwritten (versions are immutable).
    """
    _check_manifest(manifest)
    target = Path(root) / manifest["name"] / f"v{manifest['version']}"
    with staged_version(target) as staging:
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False))
        (staging / "provenance.json").write_text(
            json.dumps(provenance, indent=2, ensure_ascii=False)
        )
        (staging / "tools.py").write_text(tools_source)
        (staging / "tool_tests.py").write_text(tests_source)
        _copy_database(Path(state_db_path), staging / "state.sqlite")
    return target


@contextmanager
def staged_version(target: Path) -> Iterator[Path]:
    """A temporary sibling of ``target`` (``<root>/<name>/v<version>``) to write a package
    into: validated with load_package and renamed into place when the block ends, removed when
    it raises, so a reader never sees a half-written version; an existing version is never
    overwritten (versions are immutable)."""
    if target.exists():
        raise PackageError(f"{target} already exists; versions are immutable")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        yield staging
        load_package(staging)
        os.chmod(staging, 0o755)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _copy_database(source: Path, target: Path) -> None:
    """Copy with the sqlite backup API so a WAL or a live connection still gives a whole db."""
    if not source.is_file():
        raise PackageError(f"state database {source} does not exist")
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PackageError(f"{path.name}: not UTF-8 text ({exc})") from exc


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise PackageError(f"{path.name}: invalid JSON ({exc})") from exc


def _check_manifest(manifest: Any) -> None:
    if not isinstance(manifest, dict):
        raise PackageError("manifest.json: must be a JSON object")
    for key in MANIFEST_KEYS:
        if key not in manifest:
            raise PackageError(f"manifest.json: missing key {key!r}")
    name = manifest["name"]
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise PackageError(f"manifest.json: name {name!r} must be letters, digits, '_' or '-'")
    if not isinstance(manifest["version"], int) or manifest["version"] < 1:
        raise PackageError("manifest.json: version must be a positive integer")
    category = manifest["category"]
    if not isinstance(category, dict) or any(
        not isinstance(category.get(level), str) for level in CATEGORY_LEVELS
    ):
        raise PackageError("manifest.json: category needs string primary, secondary, tertiary")
    tools = manifest["tools"]
    if not isinstance(tools, list) or not tools:
        raise PackageError("manifest.json: tools must be a non-empty list")
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        check_tool_schema(tool, index)
        tool_name = tool["function"]["name"]
        if tool_name in seen:
            raise PackageError(f"manifest.json: tool {tool_name!r} is declared twice")
        seen.add(tool_name)
    kinds = manifest["tool_kinds"]
    if not isinstance(kinds, dict):
        raise PackageError("manifest.json: tool_kinds must be an object")
    for tool_name, kind in kinds.items():
        if kind not in TOOL_KINDS:
            raise PackageError(f"manifest.json: tool_kinds[{tool_name!r}] must be read or write")
    tables = manifest.get("tables", {})
    if not isinstance(tables, dict):
        raise PackageError("manifest.json: tables must be an object")


def check_tool_schema(tool: Any, index: int) -> None:
    where = f"manifest.json: tools[{index}]"
    if not isinstance(tool, dict) or tool.get("type") != "function":
        raise PackageError(f'{where}: must be {{"type": "function", "function": {{...}}}}')
    function = tool.get("function")
    if not isinstance(function, dict):
        raise PackageError(f"{where}: missing the function object")
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise PackageError(
            f"{where}: name {name!r} must be letters, digits, '_' or '-' (at most 64), "
            "starting with a letter"
        )
    where = f"manifest.json: tool {name!r}"
    if not isinstance(function.get("description"), str):
        raise PackageError(f"{where}: description must be a string")
    schema = function.get("parameters")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise PackageError(f'{where}: parameters must be a JSON schema with "type": "object"')
    properties = schema.get("properties", {})
    if not isinstance(properties, dict) or any(
        not isinstance(prop, dict) for prop in properties.values()
    ):
        raise PackageError(f"{where}: parameters.properties must map names to schema objects")
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in properties for r in required):
        raise PackageError(f"{where}: parameters.required must list declared properties")
    try:
        error = schema_error(schema)
    except (TypeError, ValueError, RecursionError) as exc:  # not JSON at all
        error = exc
    if error is not None:
        raise PackageError(f"{where}: parameters is not a valid JSON schema ({error})") from error


def _parse(source: str, filename: str) -> ast.Module:
    try:
        return parse_python(source, filename)
    except SyntaxError as exc:
        raise PackageError(f"{filename}: syntax error at line {exc.lineno}: {exc.msg}") from exc


def _top_level_functions(source: str, filename: str) -> dict[str, bool]:
    """Top-level function names -> whether the first parameter is `db`."""
    return dict(_top_level_functions_of(source, filename))


@lru_cache(maxsize=256)
def _top_level_functions_of(source: str, filename: str) -> tuple[tuple[str, bool], ...]:
    """Parsed once per source: a package is written, loaded and staged with the same code."""
    functions = {}
    for node in _parse(source, filename).body:
        if isinstance(node, ast.FunctionDef):
            params = node.args.posonlyargs + node.args.args
            functions[node.name] = bool(params) and params[0].arg == "db"
    return tuple(functions.items())


def _tool_tests(source: str, tool_names: set[str]) -> dict[str, list[str]]:
    """Map tool name -> its test function names (`test_<tool>__<case>(call)`)."""
    return {tool: list(tests) for tool, tests in _tool_tests_of(source, frozenset(tool_names))}


@lru_cache(maxsize=256)
def _tool_tests_of(
    source: str, tool_names: frozenset[str]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Parsed once per source and tool set (a refusal raises, and is not kept)."""
    tests: dict[str, list[str]] = {}
    for node in _parse(source, "tool_tests.py").body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        rest = node.name[len("test_") :]
        # the longest tool name the test names: a tool's own name may hold "__" or end in "_"
        named = [t for t in tool_names if rest.startswith(f"{t}__") and rest[len(t) + 2 :]]
        tool, sep, case = (max(named, key=len), "__", "") if named else rest.partition("__")
        if not sep or (not named and not case):
            raise PackageError(f"tool_tests.py: {node.name} must be named test_<tool>__<case>")
        if tool not in tool_names:
            raise PackageError(f"tool_tests.py: {node.name} tests unknown tool {tool!r}")
        tests.setdefault(tool, []).append(node.name)
    return tuple((tool, tuple(names)) for tool, names in tests.items())


def _check_state(path: Path, tables: dict[str, Any] | None) -> None:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = {
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
                )
            }
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise PackageError(f"state.sqlite: not a readable SQLite database ({exc})") from exc
    if not names:
        raise PackageError("state.sqlite: has no tables")
    for table in tables or {}:
        if table not in names:
            raise PackageError(f"manifest.json: table {table!r} is not in state.sqlite")


def _check_provenance(provenance: Any) -> None:
    if not isinstance(provenance, list):
        raise PackageError("provenance.json: must be a list of sources")
    for index, entry in enumerate(provenance):
        if not isinstance(entry, dict) or any(key not in entry for key in PROVENANCE_KEYS):
            raise PackageError(
                f"provenance.json: entry {index} needs keys {', '.join(PROVENANCE_KEYS)}"
            )
