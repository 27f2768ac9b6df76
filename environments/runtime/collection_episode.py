"""Episodes of an environment whose state is a folder of JSON collections (the Agent-World
release format), inside the sandbox worker.

The package holds `collections/<name>.json` and one released tool source per tool in
`tools/<function>.py`, unmodified. Each episode gets its own copy of the collection files in its
episode directory, and its own load of every tool source: `MCP_DB_DIR` names that directory
before the code runs, because some tools read the variable when their module loads and others
at each call. A tool whose code raises while loading is unavailable in the episode, with the
reason, and the others load as usual.

The worker (sandbox_worker.py) runs every load and call inside `Worker.collection_scope`: the
audit hook lets the tool reach that episode's directory only, and the clock and randomness are
frozen (determinism.py). A call that fails leaves the files as they were before it.

Standard library only: it runs inside the sandbox worker.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

if __package__:  # imported as environments.runtime.collection_episode (tests)
    from . import json_state
else:  # inside the sandbox worker, next to json_state.py
    import json_state

BACKEND = "json_collections"
COLLECTIONS_DIR = "collections"
TOOLS_DIR = "tools"

# scope(episode directory, epoch, seed) -> the context a load or call of that episode runs in
Scope = Callable[[str, float, str], AbstractContextManager[Any]]
Exec = Callable[[str, str, str], dict[str, Any]]


@dataclass
class CollectionPackage:
    """A package's tool sources and initial collections, loaded once per worker."""

    key: str
    schemas: dict[str, dict[str, Any]]
    sources: dict[str, tuple[str, str]]  # tool -> (file name, source)
    files: dict[str, bytes]  # collection file name -> initial bytes
    initial: dict[str, Any]  # parsed initial collections
    logs: frozenset[str]
    epoch: float
    seed: str


@dataclass
class CollectionEpisode:
    package: CollectionPackage
    directory: str
    tracker: json_state.CollectionTracker
    tools: dict[str, Callable[..., Any]] = field(default_factory=dict)
    load_problems: dict[str, str] = field(default_factory=dict)
    calls: int = 0  # successful calls: each call's seed, so failed calls shift nothing

    def seed(self) -> str:
        return f"{self.package.seed}:call:{self.calls}"

    def snapshot(self) -> dict[str, bytes]:
        """The episode's files now, to put back if a call fails."""
        saved = {}
        for entry in os.listdir(self.directory):
            path = os.path.join(self.directory, entry)
            if os.path.isfile(path):
                with open(path, "rb") as handle:
                    saved[entry] = handle.read()
        return saved

    def restore(self, saved: dict[str, bytes]) -> None:
        for entry in os.listdir(self.directory):
            path = os.path.join(self.directory, entry)
            if entry not in saved:
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.remove(path)
        for entry, data in saved.items():
            with open(os.path.join(self.directory, entry), "wb") as handle:
                handle.write(data)

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def load_package(
    key: str, package_dir: str, schemas: dict[str, dict[str, Any]], state: dict[str, Any]
) -> CollectionPackage:
    """Read a staged package's collections and tool sources (no tool code runs here)."""
    collections_dir = os.path.join(package_dir, COLLECTIONS_DIR)
    files = {}
    for entry in sorted(os.listdir(collections_dir)):
        path = os.path.join(collections_dir, entry)
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                files[entry] = handle.read()
    sources = {}
    for tool in schemas:
        filename = function_name(tool) + ".py"
        path = os.path.join(package_dir, TOOLS_DIR, filename)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                sources[tool] = (filename, handle.read())
    initial = {
        entry[: -len(json_state.SUFFIX)]: json_state.parse_collection(data)
        for entry, data in files.items()
        if entry.endswith(json_state.SUFFIX)
    }
    return CollectionPackage(
        key=key,
        schemas=schemas,
        sources=sources,
        files=files,
        initial=initial,
        logs=frozenset(state.get("log_collections") or ()),
        epoch=float(state.get("epoch") or 0.0),
        seed=str(state.get("seed") or key),
    )


def start_episode(
    package: CollectionPackage, directory: str, scope: Scope, exec_source: Exec
) -> CollectionEpisode:
    """Copy the initial files into the episode directory, then load every tool there."""
    os.makedirs(directory, exist_ok=True)
    for entry, data in package.files.items():
        with open(os.path.join(directory, entry), "wb") as handle:
            handle.write(data)
    episode = CollectionEpisode(
        package, directory, json_state.CollectionTracker(package.initial, directory, package.logs)
    )
    for tool in package.schemas:
        if tool not in package.sources:
            episode.load_problems[tool] = "the package holds no code for it"
            continue
        filename, source = package.sources[tool]
        try:
            with scope(directory, package.epoch, f"{package.seed}:load:{tool}"):
                namespace = exec_source(source, filename, "aw_release_" + function_name(tool))
        except BaseException as exc:  # noqa: BLE001 - their code, any failure
            episode.load_problems[tool] = describe_load_failure(exc)
            continue
        function = namespace.get(function_name(tool))
        if not callable(function):
            episode.load_problems[tool] = f"its code defines no function {function_name(tool)}()"
            continue
        episode.tools[tool] = function
    if episode.load_problems:  # a failed load may have written files: start from the copy
        episode.restore(dict(package.files))
    return episode


def describe_load_failure(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__
        message = "<unprintable>"
    return f"its code raised {type(exc).__name__} while loading: {message or 'no message'}"[:500]


def function_name(tool: str) -> str:
    """The function a tool's code lives in (python_source.python_name; no project import)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in tool)
