"""The publish stage: the verified tools and the database become one environment package.

Only verified tools are written; the state database loses the provenance table (kept in
provenance.json instead). write_package stages the package and renames it into place, so a
failed publish leaves nothing half-written.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from environments.discovery.schema import read_schema
from environments.discovery.sources import read_provenance
from environments.discovery.sources.base import PROVENANCE_TABLE

from .request import CategoryPath, EnvironmentSpec
from .stage_results import Progress, PublishResult, VerifyResult, quiet


def publish_package(
    root: str | Path,
    spec: EnvironmentSpec,
    category: CategoryPath,
    db_path: str | Path,
    verified: VerifyResult,
    *,
    extra_manifest: dict[str, Any] | None = None,
    progress: Progress = quiet,
) -> PublishResult:
    """Write the package (verified tools only) under root/<name>/v<version>."""
    from environments.package import write_package

    report = verified.report
    if not report.get("verified"):
        raise ValueError(f"{spec.name}: not verified, not published ({report.get('summary')})")
    tools = verified.kept
    names = [n for n in tools.names() if n in set(report["verified_tools"])]
    provenance = read_provenance(db_path)
    version = spec.version or next_version_on_disk(Path(root), spec.name)
    state = Path(db_path).with_suffix(".state.sqlite")
    shutil.copyfile(db_path, state)
    try:
        with sqlite3.connect(state) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {PROVENANCE_TABLE}")
        with sqlite3.connect(state) as conn:
            conn.execute("VACUUM")
        tables = manifest_tables(state)
        manifest = {
            "name": spec.name,
            "version": version,
            "title": spec.title,
            "description": spec.description,
            "category": category.as_dict(),
            "tools": tools.manifest_tools(names),
            "tool_kinds": {n: tools.kinds[n] for n in names},
            "tables": tables,
            **(extra_manifest or {}),
        }
        progress(0.5, f"publishing {len(names)} tools")
        path = write_package(
            root,
            manifest,
            state,
            tools.tools_source(names),
            tools.tests_source(names),
            provenance,
        )
    finally:
        state.unlink(missing_ok=True)
    progress(1.0, f"published {path}")
    return PublishResult(str(path), int(Path(path).name[1:]))


def next_version_on_disk(root: Path, name: str) -> int:
    """Past every version directory of `name` under root, so none is overwritten."""
    versions = [int(p.name[1:]) for p in (Path(root) / name).glob("v*") if p.name[1:].isdigit()]
    return max(versions, default=0) + 1


def manifest_tables(db_path: str | Path) -> dict[str, dict[str, Any]]:
    """The manifest's `tables`: each table's key columns (all of a composite key, in order)
    and the links it holds."""
    return {
        t.name: {
            "primary_key": list(t.key_columns),
            "foreign_keys": [
                {"column": c, "references": f"{rt}.{rc}"} for c, (rt, rc) in t.foreign_keys.items()
            ],
        }
        for t in read_schema(db_path).values()
    }
