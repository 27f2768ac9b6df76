"""The build pipeline: ingest -> schema -> tools -> sandbox verification -> publish.

Each stage is a plain function of plain arguments with a `progress(fraction, message)` callback,
so a job can run them and a bulk builder can run many in worker processes. `run_pipeline` runs
all five for one `BuildRequest` and records, stage by stage, what survived it (the yield: files,
tables, rows, inferred keys, tools generated, tools verified). A stage that fails raises
`BuildFailed` naming the stage; nothing half-published is left behind (packages are written to a
staging directory and renamed into place).
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.discovery.schema import read_schema
from environments.discovery.sources import mine_sources, read_provenance
from environments.discovery.sources.base import PROVENANCE_TABLE
from environments.discovery.taxonomy import is_valid
from environments.discovery.tool_generator import ToolSet, generate_tools
from environments.discovery.verification import verify_tools

from .request import BuildRequest, CategoryPath

Progress = Callable[[float, str], None]
STAGES = ("ingest", "schema", "tools", "verify", "publish")
# The share of a build's progress bar each stage covers.
STAGE_SPANS = {
    "ingest": (0.0, 0.2),
    "schema": (0.2, 0.25),
    "tools": (0.25, 0.4),
    "verify": (0.4, 0.9),
    "publish": (0.9, 0.97),
}


def _quiet(fraction: float, message: str = "") -> None:
    return None


class BuildFailed(Exception):
    """A stage of a build failed; `stage` names it, the message says why."""

    def __init__(self, stage: str, reason: str, build_yield: dict[str, Any] | None = None):
        self.stage = stage
        self.reason = reason
        self.build_yield = dict(build_yield or {})
        super().__init__(f"{stage} stage failed: {reason}")


@dataclass
class BuildOutcome:
    path: str
    report: dict[str, Any]
    explanation: str
    category: dict[str, str]
    build_yield: dict[str, Any] = field(default_factory=dict)


# --- stages -----------------------------------------------------------------------------


def mine_environment(spec: dict, workdir: str | Path, progress: Progress = _quiet) -> dict:
    """Ingest: real data (package datasets, files) into one SQLite database (atomic)."""
    category = spec.get("category") or {}
    if category and not is_valid(category.get("primary", ""), category.get("secondary", "")):
        raise ValueError(f"{spec['name']}: category {category} is not in the taxonomy")
    progress(0.1, f"mining {spec['name']}")
    target = Path(workdir) / f"{spec['name']}.sqlite"
    target.unlink(missing_ok=True)
    files = [Path(f) for f in spec.get("files", [])]
    db_path = mine_sources(target, files=files, datasets=spec.get("datasets", []))
    progress(1.0, f"mined {spec['name']}")
    return {"db_path": str(db_path), "provenance": read_provenance(db_path)}


def design_tools(
    db_path: str | Path,
    label: str,
    llm_settings: Any = None,
    theme: dict | None = None,
    progress: Progress = _quiet,
) -> dict:
    """Tools: schema-driven tools, plus LLM domain tools when an LLM is configured."""
    progress(0.1, "generating schema tools")
    schema_tools = generate_tools(db_path, label)
    llm_tools = None
    if llm_settings is not None:
        from environments.discovery.tool_design_agent import design_domain_tools

        progress(0.5, "asking the LLM for domain tools")
        llm_tools = design_domain_tools(llm_settings, db_path, theme or {"title": label})
    progress(1.0, f"{len(schema_tools.names())} schema tools")
    return {
        "schema_tools": schema_tools.as_dict(),
        "llm_tools": llm_tools.as_dict() if llm_tools is not None else None,
    }


def verify_environment(
    name: str,
    db_path: str | Path,
    schema_tools: dict,
    llm_tools: dict | None = None,
    category: dict | None = None,
    threshold: float = 0.5,
    min_tools: int = 5,
    pool: Any = None,
    progress: Progress = _quiet,
) -> dict:
    """Sandbox verification. Returns the report and the verified tools (plain dicts)."""
    report, kept = verify_tools(
        name,
        db_path,
        ToolSet.from_dict(schema_tools),
        ToolSet.from_dict(llm_tools) if llm_tools else None,
        pool=pool,
        threshold=threshold,
        min_tools=min_tools,
        category=category,
        progress=progress,
    )
    return {"report": report.as_dict(), "explanation": report.explain(), "tools": kept.as_dict()}


def publish(
    root: str | Path,
    spec: dict,
    db_path: str | Path,
    tools: dict,
    report: dict,
    progress: Progress = _quiet,
    extra_manifest: dict | None = None,
) -> str:
    """Publish: write the package (verified tools only) with write_package; returns its path."""
    from environments.package import write_package

    if not report.get("verified"):
        raise ValueError(f"{spec['name']}: not verified, not published ({report.get('summary')})")
    verified = ToolSet.from_dict(tools)
    names = [n for n in verified.names() if n in set(report["verified_tools"])]
    provenance = read_provenance(db_path)
    state = Path(db_path).with_suffix(".state.sqlite")
    shutil.copyfile(db_path, state)
    try:
        with sqlite3.connect(state) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {PROVENANCE_TABLE}")
        with sqlite3.connect(state) as conn:
            conn.execute("VACUUM")
        tables = {
            t.name: {
                "primary_key": [t.primary_key] if t.primary_key else [],
                "foreign_keys": [
                    {"column": c, "references": f"{rt}.{rc}"}
                    for c, (rt, rc) in t.foreign_keys.items()
                ],
            }
            for t in read_schema(state).values()
        }
        manifest = {
            "name": spec["name"],
            "version": spec.get("version") or next_version_on_disk(Path(root), spec["name"]),
            "title": spec["title"],
            "description": spec["description"],
            "category": spec["category"],
            "tools": verified.manifest_tools(names),
            "tool_kinds": {n: verified.kinds[n] for n in names},
            "tables": tables,
            **(extra_manifest or {}),
        }
        progress(0.5, f"publishing {len(names)} tools")
        path = write_package(
            root,
            manifest,
            state,
            verified.tools_source(names),
            verified.tests_source(names),
            provenance,
        )
    finally:
        state.unlink(missing_ok=True)
    progress(1.0, f"published {path}")
    return str(path)


def next_version_on_disk(root: Path, name: str) -> int:
    versions = [int(p.name[1:]) for p in (Path(root) / name).glob("v*") if p.name[1:].isdigit()]
    return max(versions, default=0) + 1


# --- yields -----------------------------------------------------------------------------


def ingest_yield(spec: dict, db_path: str | Path, provenance: list[dict]) -> dict[str, Any]:
    schema = read_schema(db_path)
    return {
        "files": [Path(f).name for f in spec.get("files", [])],
        "datasets": list(spec.get("datasets", [])),
        "tables": len(schema),
        "rows": sum(t.row_count for t in schema.values()),
        "rows_by_table": {name: t.row_count for name, t in schema.items()},
        "sources": len(provenance),
    }


def schema_yield(db_path: str | Path) -> dict[str, Any]:
    schema = read_schema(db_path)
    return {
        "tables": len(schema),
        "columns": sum(len(t.columns) for t in schema.values()),
        "primary_keys": {n: t.primary_key for n, t in schema.items() if t.primary_key},
        "foreign_keys": [
            f"{n}.{c} -> {rt}.{rc}"
            for n, t in schema.items()
            for c, (rt, rc) in t.foreign_keys.items()
        ],
        "enums": {n: t.group_columns() for n, t in schema.items() if t.group_columns()},
    }


def classify_database(spec: dict, db_path: str | Path) -> CategoryPath:
    """A category for a build that named none: the offline classifier over title and tables."""
    from environments.discovery.classify import classify_offline

    schema = read_schema(db_path)
    words = " ".join(
        [spec.get("description", "")]
        + [f"{n} {' '.join(c.name for c in t.columns)}" for n, t in schema.items()]
    )
    found = classify_offline(
        {"name": spec["name"], "title": spec["title"], "description": words.replace("_", " ")}
    )
    return CategoryPath(found.primary, found.secondary, found.tertiary)


# --- the whole build --------------------------------------------------------------------


def run_pipeline(
    request: BuildRequest,
    *,
    root: str | Path,
    workdir: str | Path,
    version: int | None = None,
    llm: Any = None,
    pool: Any = None,
    progress: Progress = _quiet,
    on_stage: Callable[[str, dict[str, Any]], None] | None = None,
) -> BuildOutcome:
    """All five stages for one request. Raises BuildFailed naming the stage that failed;
    `on_stage(stage, build_yield)` is called after each stage with the yield so far."""
    build_yield: dict[str, Any] = {}
    spec = request.spec()
    if version is not None:
        spec["version"] = version

    def span(stage: str) -> Progress:
        start, end = STAGE_SPANS[stage]
        return lambda fraction, message="": progress(start + (end - start) * fraction, message)

    def done(stage: str, values: dict[str, Any]) -> None:
        build_yield[stage] = values
        if on_stage is not None:
            on_stage(stage, dict(build_yield))

    def step(stage: str, function: Callable[[], Any]) -> Any:
        try:
            return function()
        except BuildFailed:
            raise
        except Exception as exc:  # the cause stays on __cause__ (a job re-raises interruptions)
            raise BuildFailed(stage, f"{type(exc).__name__}: {exc}", build_yield) from exc

    mined = step("ingest", lambda: mine_environment(spec, workdir, span("ingest")))
    db_path = mined["db_path"]
    done("ingest", step("ingest", lambda: ingest_yield(spec, db_path, mined["provenance"])))
    if not build_yield["ingest"]["rows"]:
        raise BuildFailed("ingest", "the input parsed to no rows", build_yield)

    def schema() -> dict[str, Any]:
        values = schema_yield(db_path)
        if not spec["category"]:
            spec["category"] = classify_database(spec, db_path).as_dict()
            values["category_classified"] = True
        values["category"] = spec["category"]
        span("schema")(1.0, f"{values['tables']} tables, {len(values['foreign_keys'])} links")
        return values

    done("schema", step("schema", schema))
    theme = {"title": spec["title"], "description": spec["description"]}
    designed = step(
        "tools", lambda: design_tools(db_path, spec["title"], llm, theme, span("tools"))
    )
    schema_tools = designed["schema_tools"]["functions"]
    llm_tools = (designed["llm_tools"] or {}).get("functions", [])
    kinds = designed["schema_tools"].get("kinds", {})
    done(
        "tools",
        {
            "generated": len(schema_tools) + len(llm_tools),
            "schema_tools": len(schema_tools),
            "llm_tools": len(llm_tools),
            "read": sum(1 for k in kinds.values() if k == "read"),
            "write": sum(1 for k in kinds.values() if k == "write"),
        },
    )
    if not schema_tools and not llm_tools:
        raise BuildFailed("tools", "no tools could be generated from the schema", build_yield)
    checked = step(
        "verify",
        lambda: verify_environment(
            spec["name"],
            db_path,
            designed["schema_tools"],
            designed["llm_tools"],
            spec["category"],
            threshold=request.options.threshold,
            min_tools=request.min_tools,
            pool=pool,
            progress=span("verify"),
        ),
    )
    report = checked["report"]
    done(
        "verify",
        {
            "tested": len(report.get("verdicts", [])),
            "verified": len(report["verified_tools"]),
            "rejected": len(report.get("verdicts", [])) - len(report["verified_tools"]),
            "threshold": request.options.threshold,
            "min_tools": request.min_tools,
            "passed": bool(report["verified"]),
            "summary": report.get("summary", ""),
        },
    )
    if not report["verified"]:
        failed = BuildFailed("verify", checked["explanation"][:5000], build_yield)
        failed.report = report
        raise failed
    path = step(
        "publish",
        lambda: publish(root, spec, db_path, checked["tools"], report, span("publish")),
    )
    done(
        "publish",
        {"path": path, "version": int(Path(path).name[1:]), "tools": len(report["verified_tools"])},
    )
    return BuildOutcome(path, report, checked["explanation"], spec["category"], build_yield)
