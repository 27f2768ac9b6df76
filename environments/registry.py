"""Recording published environment packages in the database (the catalogue's source of truth
stays on disk; these rows make it searchable and reviewable)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from django.db import transaction

from environments.discovery.code_safety import function_sources
from environments.models import Category, Environment, Theme, Tool, ToolTest
from environments.package import COLLECTION_BACKEND, EnvironmentPackage, load_package
from environments.python_source import python_name


def database_size(state_path: Path) -> tuple[int, int]:
    """(tables, rows) of a state database, read-only."""
    with sqlite3.connect(f"file:{state_path}?mode=ro", uri=True) as db:
        tables = [
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        rows = sum(db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)
    return len(tables), rows


def collections_size(package: EnvironmentPackage) -> tuple[int, int]:
    """(collections, rows) of a package of JSON collections: a document counts as one row."""
    import json

    files = sorted(package.collections_path.glob("*.json"))
    rows = 0
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
        rows += len(data) if isinstance(data, list) else 1
    return len(files), rows


def released_sources(package: EnvironmentPackage) -> dict[str, str]:
    """Function name -> a released tool's whole source file, as it runs (module-level code
    and all: some read MCP_DB_DIR there)."""
    return {
        path.stem: path.read_text(encoding="utf-8")
        for path in sorted((package.path / "tools").glob("*.py"))
    }


def category_for(manifest: dict[str, Any]) -> Category | None:
    category = manifest.get("category") or {}
    if not category.get("primary"):
        return None
    return Category.ensure_path(
        category["primary"], category.get("secondary"), category.get("tertiary")
    )


def tool_results(verification: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Per-tool verification results, whichever report shape produced them: the verify stage's
    report (`VerificationReport.as_dict`: a "verdicts" list, one per tool and origin, of which
    the verified one is the tool published), or a {"tools": {name: result}} mapping."""
    if not verification:
        return {}
    verdicts = verification.get("verdicts")
    if isinstance(verdicts, list):
        chosen: dict[str, dict[str, Any]] = {}
        for verdict in verdicts:
            if not isinstance(verdict, dict) or "name" not in verdict:
                continue
            held = chosen.get(verdict["name"])
            if held is None or (verdict.get("verified") and not held.get("verified")):
                chosen[verdict["name"]] = verdict
        return chosen
    tools = verification.get("tools", verification)
    if isinstance(tools, list):
        return {item["name"]: item for item in tools if isinstance(item, dict) and "name" in item}
    return {name: value for name, value in tools.items() if isinstance(value, dict)}


def failed_test_names(result: dict[str, Any]) -> set[str]:
    """The tests a tool's verification result failed: its named failed tests, else the names
    its error lines start with ("test_x__y: AssertionError ...")."""
    named = result.get("failed_tests")
    if isinstance(named, list):
        return {str(name) for name in named}
    return {
        error.split(":", 1)[0].strip()
        for error in result.get("errors", [])
        if isinstance(error, str)
    }


@transaction.atomic
def record_package(
    package: EnvironmentPackage | str | Path,
    *,
    verification: dict[str, Any] | None = None,
    theme: Theme | None = None,
    parent: Environment | None = None,
    user: Any = None,
) -> Environment:
    """Create the verified Environment row, its Tools and ToolTests for a published package."""
    if not isinstance(package, EnvironmentPackage):
        package = load_package(package)
    existing = Environment.objects.filter(name=package.name, version=package.version).first()
    if existing is not None:
        if existing.content_hash != package.content_hash:
            raise ValueError(
                f"{existing} is already recorded with different content; versions are immutable"
            )
        return existing
    manifest = package.manifest
    if package.state_backend == COLLECTION_BACKEND:
        tables, rows = collections_size(package)
    else:
        tables, rows = database_size(package.state_path)
    environment = Environment.objects.create(
        name=package.name,
        version=package.version,
        title=manifest.get("title", package.name),
        description=manifest.get("description", ""),
        theme=theme,
        category=category_for(manifest),
        status=Environment.Status.VERIFYING,
        parent=parent,
        package_path=str(package.path),
        content_hash=package.content_hash,
        manifest=manifest,
        provenance=package.provenance,
        verification_report=verification or {},
        table_count=tables,
        row_count=rows,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    sources = (
        released_sources(package)
        if package.state_backend == COLLECTION_BACKEND
        else function_sources(package.tools_source)
    )
    test_sources = function_sources(package.tests_source)
    results = tool_results(verification)
    origins = manifest.get("tool_origins", {})
    tools = []
    for schema in package.tools:
        name = schema["function"]["name"]
        result = results.get(name, {})
        tools.append(
            Tool(
                environment=environment,
                name=name,
                description=schema["function"].get("description", ""),
                kind=package.tool_kind(name),
                origin=origins.get(name, Tool.Origin.SCHEMA),
                schema=schema,
                source=sources.get(python_name(name), ""),
                verified=bool(result.get("verified", True)),
                test_accuracy=result.get("accuracy"),
                verification=result,
            )
        )
    Tool.objects.bulk_create(tools)
    by_name = {tool.name: tool for tool in environment.tools.all()}
    tests = [
        ToolTest(
            tool=by_name[tool_name],
            name=test_name,
            source=test_sources.get(test_name, ""),
            # None: no verification result names this tool, so no outcome is known.
            passed=(
                test_name not in failed_test_names(results[tool_name])
                if tool_name in results
                else None
            ),
        )
        for tool_name, test_names in package.tool_tests.items()
        if tool_name in by_name
        for test_name in test_names
    ]
    ToolTest.objects.bulk_create(tests)
    environment.tool_count = len(tools)
    environment.save(update_fields=["tool_count"])
    environment.transition(Environment.Status.VERIFIED)
    return environment
