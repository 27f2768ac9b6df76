"""Writing a released environment as a package of JSON collections.

Layout (environments.package reads it back): manifest.json, provenance.json, README.md (the
release's schema and business rules), collections/<name>.json (the release's files, byte for
byte), tools/<function>.py (each released implementation, unmodified) and questions.json (the
release's questions for the environment, as released, when it has any). The manifest's
`state` says how episodes run it: the backend, each collection's kind and key, the log
collections left out of state comparison, the frozen clock and the seed of the version.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.package import COLLECTION_BACKEND, staged_version
from environments.runtime import json_state

from .release import ReleaseEnvironment, ReleaseTool

QUESTIONS_FILE = "questions.json"  # the release's questions/<env_id>.json, as released


@dataclass(frozen=True)
class CollectionPlan:
    """What the package holds besides the release's files: the tools kept and how to run them."""

    name: str
    version: int
    title: str
    description: str
    category: dict[str, str]
    tools: tuple[ReleaseTool, ...]
    tool_kinds: dict[str, str]
    log_collections: tuple[str, ...]
    clock: str  # ISO 8601 UTC: the frozen clock of this version
    release_path: str


def collection_keys(environment: ReleaseEnvironment) -> dict[str, dict[str, Any]]:
    """Per collection: its kind, how rows are matched (["id"], or [] for by content) and its
    size, as the manifest and the schema stage record them."""
    keys = {}
    for collection in environment.collections:
        rows = collection.data if isinstance(collection.data, list) else None
        keyed = rows is not None and json_state.rows_have_ids(rows)
        keys[collection.name] = {
            "kind": collection.kind,
            "key": ["id"] if keyed else [],
            "rows": collection.row_count,
        }
    return keys


def version_seed(name: str, version: int, env_id: str) -> str:
    """The seed of a version's randomness: fixed by what the version is."""
    return hashlib.sha256(f"agent_world:{env_id}:{name}:v{version}".encode()).hexdigest()[:16]


def manifest_of(environment: ReleaseEnvironment, plan: CollectionPlan) -> dict[str, Any]:
    return {
        "name": plan.name,
        "version": plan.version,
        "title": plan.title,
        "description": plan.description,
        "category": plan.category,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in plan.tools
        ],
        "tool_kinds": {tool.name: plan.tool_kinds.get(tool.name, "read") for tool in plan.tools},
        "tool_origins": {tool.name: "imported" for tool in plan.tools},  # Tool.Origin.IMPORTED
        "state": {
            "backend": COLLECTION_BACKEND,
            "collections": collection_keys(environment),
            "log_collections": list(plan.log_collections),
            "clock": plan.clock,
            "seed": version_seed(plan.name, plan.version, environment.env_id),
        },
        "release": {
            "format": "agent_world",
            "env_id": environment.env_id,
            "name": environment.name,
            "path": plan.release_path,
            "taxonomy": environment.taxonomy.as_dict(),
        },
    }


def write_collection_package(
    root: str | os.PathLike[str], environment: ReleaseEnvironment, plan: CollectionPlan
) -> Path:
    """Publish at <root>/<name>/v<version>/ (staged, validated, renamed into place; an existing
    version is never overwritten)."""
    target = Path(root) / plan.name / f"v{plan.version}"
    with staged_version(target) as staging:
        manifest = manifest_of(environment, plan)
        (staging / "manifest.json").write_text(
            json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8"
        )
        provenance = [
            {
                "table": collection.name,
                "source": f"agent_world:{environment.env_id}",
                "kind": "agent_world",
                "detail": f"{plan.release_path}/{environment.env_id}/{collection.filename}",
            }
            for collection in environment.collections
        ]
        (staging / "provenance.json").write_text(
            json.dumps(provenance, indent=2, ensure_ascii=False), encoding="utf-8"
        )
        (staging / "README.md").write_text(environment.readme, encoding="utf-8")
        (staging / "collections").mkdir()
        for collection in environment.collections:
            shutil.copyfile(
                environment.directory / collection.filename,
                staging / "collections" / collection.filename,
            )
        if environment.questions_path is not None:  # the release's questions, for the tasks app
            shutil.copyfile(environment.questions_path, staging / QUESTIONS_FILE)
        (staging / "tools").mkdir()
        for tool in plan.tools:
            (staging / "tools" / f"{tool.function}.py").write_text(tool.source, encoding="utf-8")
    return target
