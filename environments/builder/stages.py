"""The one stage runner every build goes through: ingest -> schema -> tools -> verify -> publish.

An origin (a data file or built-in source, a theme, a complexified environment; any later one)
plugs in as an `OriginStages`: it brings its own ingest and tools stages, and may add facts to
the shared schema stage, review the verification and add to the manifest. `run_stages` runs
them with the shared schema, verify and publish stages, maps each stage onto its share of the
progress bar, records what survived each stage (the yield, `Environment.build_yield`) and raises
`BuildFailed(stage, reason, build_yield)` naming the stage that failed.

Stages hand each other typed results; tools stay a `ToolSet` until the package is written.
"""

from __future__ import annotations

import sqlite3
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from aw_site.refusals import JobRefused
from environments.discovery.domain_rules import infer_rules
from environments.discovery.schema import Table, read_schema
from environments.discovery.tool_generator import ToolSet
from environments.discovery.verification import verify_tools

from .publish import publish_package
from .request import CategoryPath, EnvironmentSpec
from .stage_results import (
    BuildOutcome,
    IngestResult,
    Progress,
    SchemaResult,
    ToolsResult,
    VerifyResult,
    quiet,
)

StageCallback = Callable[[str, dict[str, Any]], None]
STAGES = ("ingest", "schema", "tools", "verify", "publish")
# The share of a build's progress bar each stage covers.
STAGE_SPANS = {
    "ingest": (0.0, 0.2),
    "schema": (0.2, 0.25),
    "tools": (0.25, 0.4),
    "verify": (0.4, 0.9),
    "publish": (0.9, 0.97),
}
T = TypeVar("T")


class BuildFailed(JobRefused):
    """A stage of a build failed; `stage` names it, the message says why, `build_yield` holds
    what the stages before it (and the failed one, when it got that far) yielded."""

    def __init__(
        self,
        stage: str,
        reason: str,
        build_yield: dict[str, Any] | None = None,
        report: dict[str, Any] | None = None,
    ):
        self.stage = stage
        self.reason = reason
        self.build_yield = dict(build_yield or {})
        self.report = report
        super().__init__(f"{stage} stage failed: {reason}")


class StageRefused(Exception):
    """Raised by an origin's stage that ran but cannot go on: `facts` are still recorded as the
    stage's yield before the build fails naming the stage."""

    def __init__(self, reason: str, facts: dict[str, Any] | None = None):
        self.reason = reason
        self.facts = facts
        super().__init__(reason)


class OriginStages(ABC):
    """One origin's part of a build: its ingest and tools stages, and what it adds to the
    shared schema, verify and publish stages."""

    def __init__(self, spec: EnvironmentSpec):
        self.spec = spec

    @abstractmethod
    def ingest(self, progress: Progress) -> IngestResult:
        """The data into one SQLite database; raise StageRefused when there is none."""

    @abstractmethod
    def tools(self, ingested: IngestResult, progress: Progress) -> ToolsResult:
        """The tools over that database; raise StageRefused when there are none."""

    def schema_facts(self, ingested: IngestResult) -> dict[str, Any]:
        """What the origin adds to the schema stage's yield."""
        return {}

    def review(self, verified: VerifyResult) -> VerifyResult:
        """The origin's reading of the verification (its rejected tools, its tool order)."""
        return verified

    def manifest_extra(self, verified: VerifyResult) -> dict[str, Any]:
        """What the origin adds to the published manifest."""
        return {}

    def summary(self, build_yield: dict[str, Any]) -> dict[str, Any]:
        """Keys the origin keeps on the yield after every stage (a theme's funnel, LLM notes)."""
        return {}

    def label(self) -> str:
        """What is being built, as a failure names it ("the theme 'Petstore' (petstore.json)")."""
        return f"the environment {self.spec.name!r}"


# --- the runner ------------------------------------------------------------------------------


class StageRunner:
    """Runs named stages with their progress span and records each stage's yield."""

    def __init__(
        self,
        progress: Progress = quiet,
        on_stage: StageCallback | None = None,
        summary: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        label: str = "the build",
    ):
        self.progress = progress
        self.on_stage = on_stage
        self.summary = summary
        self.label = label
        self.build_yield: dict[str, Any] = {}

    def span(self, stage: str) -> Progress:
        """The stage's own 0..1 progress mapped onto its share of the build's bar."""
        start, end = STAGE_SPANS[stage]
        return lambda fraction, message="": self.progress(start + (end - start) * fraction, message)

    def run(self, stage: str, work: Callable[[Progress], T]) -> T:
        """Run one stage; any failure becomes BuildFailed naming it (the cause stays on
        __cause__, so a job re-raises interruptions)."""
        try:
            return work(self.span(stage))
        except BuildFailed:
            raise
        except StageRefused as refused:
            if refused.facts is not None:
                self.record(stage, refused.facts)
            raise self.failed(stage, refused.reason) from None
        except Exception as exc:
            raise self.failed(stage, unexpected_failure(stage, self.label, exc)) from exc

    def record(self, stage: str, facts: dict[str, Any]) -> None:
        """Keep what survived the stage and tell the caller (the job updates its draft row)."""
        self.build_yield[stage] = facts
        if self.summary is not None:
            self.build_yield.update(self.summary(self.build_yield))
        if self.on_stage is not None:
            self.on_stage(stage, dict(self.build_yield))

    def failed(self, stage: str, reason: str, report: dict[str, Any] | None = None) -> BuildFailed:
        return BuildFailed(stage, reason, self.build_yield, report)


def run_stages(
    origin: OriginStages,
    *,
    root: str | Path,
    threshold: float = 0.5,
    min_tools: int = 5,
    pool: Any = None,
    progress: Progress = quiet,
    on_stage: StageCallback | None = None,
) -> BuildOutcome:
    """The five stages for one origin. Raises BuildFailed naming the stage that failed;
    `on_stage(stage, build_yield)` is called after each stage with the yield so far."""
    runner = StageRunner(progress, on_stage, origin.summary, origin.label())
    spec = origin.spec

    ingested = runner.run("ingest", origin.ingest)
    runner.record("ingest", ingested.facts)
    if not ingested.facts.get("rows"):
        raise runner.failed("ingest", "the input parsed to no rows")

    schema = runner.run("schema", lambda span: schema_stage(origin, ingested, span))
    runner.record("schema", schema.facts)

    tools = runner.run("tools", lambda span: origin.tools(ingested, span))
    runner.record("tools", tools.facts)

    def verify(span: Progress) -> VerifyResult:
        report, kept = verify_tools(
            spec.name,
            ingested.db_path,
            tools.toolset,
            tools.llm_toolset,
            pool=pool,
            threshold=threshold,
            min_tools=min_tools,
            category=schema.category.as_dict(),
            progress=span,
        )
        return origin.review(VerifyResult(report.as_dict(), report.explain(), kept))

    verified = runner.run("verify", verify)
    runner.record("verify", verify_yield(verified, threshold, min_tools))
    if not verified.report["verified"]:
        raise runner.failed("verify", verified.explanation[:5000], verified.report)

    published = runner.run(
        "publish",
        lambda span: publish_package(
            root,
            spec,
            schema.category,
            ingested.db_path,
            verified,
            extra_manifest=origin.manifest_extra(verified),
            progress=span,
        ),
    )
    runner.record(
        "publish",
        {
            "path": published.path,
            "version": published.version,
            "tools": len(verified.report["verified_tools"]),
        },
    )
    return BuildOutcome(
        published.path,
        verified.report,
        verified.explanation,
        schema.category.as_dict(),
        runner.build_yield,
    )


def unexpected_failure(stage: str, label: str, exc: BaseException) -> str:
    """An exception no stage expected, in words: what was built, where it stopped, the error
    and the line of the project's code that raised it (never a bare `KeyError: 'id'`)."""
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if "site-packages" not in f.filename
    ]
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    detail = str(exc) or "no message"
    if isinstance(exc, KeyError) and exc.args:
        detail = f"no entry {exc.args[0]!r} where one was expected"
    return (
        f"{type(exc).__name__}: {detail} (an unexpected error in the {stage} stage of "
        f"{label}{where}; nothing was published)"
    )


# --- the shared stages' yields -------------------------------------------------------------


def database_facts(db_path: str | Path, provenance: list[dict[str, Any]]) -> dict[str, Any]:
    """The ingest yield every origin shares: tables, rows (per table), data sources and the notes
    of what a source held but the build did not honour (a SQL script's triggers, dropped CHECKs)."""
    schema = read_schema(db_path)
    notes = [p["detail"] for p in provenance if p.get("kind") == "sql:note"]
    facts = {
        "tables": len(schema),
        "rows": sum(t.row_count for t in schema.values()),
        "rows_by_table": {name: t.row_count for name, t in schema.items()},
        "sources": len(provenance) - len(notes),
    }
    if notes:
        facts["notes"] = notes
    return facts


def schema_stage(origin: OriginStages, ingested: IngestResult, progress: Progress) -> SchemaResult:
    """Keys, foreign keys and enums of the database; a category for a build that named none."""
    schema = read_schema(ingested.db_path)
    facts: dict[str, Any] = {
        "tables": len(schema),
        "columns": sum(len(t.columns) for t in schema.values()),
        "primary_keys": {n: _key_words(t) for n, t in schema.items() if t.key_columns},
        "foreign_keys": [
            f"{n}.{c} -> {rt}.{rc}"
            for n, t in schema.items()
            for c, (rt, rc) in t.foreign_keys.items()
        ],
        "enums": enum_columns(ingested.db_path, schema),
    }
    category = origin.spec.category
    if category is None:
        category, facts["category_reason"] = classify_database(origin.spec, ingested.db_path)
        facts["category_classified"] = True
    facts["category"] = category.as_dict()
    facts.update(origin.schema_facts(ingested))
    progress(1.0, f"{facts['tables']} tables, {len(facts['foreign_keys'])} links")
    return SchemaResult(category, facts)


def _key_words(table: Table) -> str:
    """`track_id`, or `playlist_id + track_id` for a key of several columns."""
    return " + ".join(table.key_columns)


def enum_columns(db_path: str | Path, schema: dict[str, Table]) -> dict[str, dict[str, list]]:
    """table -> column -> allowed values: the enum and state columns the tools enforce
    (domain_rules), not merely the columns with few values."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        found: dict[str, dict[str, list]] = {}
        for name, table in schema.items():
            rules = infer_rules(conn, table)
            columns = {c: list(r.values) for c, r in rules.states.items()}
            columns.update({c: list(v) for c, v in rules.enums.items() if c not in columns})
            if columns:
                found[name] = columns
        return found
    finally:
        conn.close()


def classify_database(spec: EnvironmentSpec, db_path: str | Path) -> tuple[CategoryPath, str]:
    """A category for a build that named none (the offline classifier over title, tables and
    columns) and the reason in words: the words that matched, or that none did."""
    from environments.discovery.classify import classify_offline

    schema = read_schema(db_path)
    found = classify_offline(
        {
            "name": spec.name,
            "title": spec.title,
            "description": spec.description,
            "tables": {n: [c.name for c in t.columns] for n, t in schema.items()},
        }
    )
    return CategoryPath(found.primary, found.secondary, found.tertiary), found.reason


def verify_yield(verified: VerifyResult, threshold: float, min_tools: int) -> dict[str, Any]:
    """What survived the sandbox: tools tested, verified and rejected, and the bar they met."""
    report = verified.report
    tested = len(report.get("verdicts", []))
    facts: dict[str, Any] = {
        "tested": tested,
        "verified": len(report["verified_tools"]),
        "rejected": tested - len(report["verified_tools"]),
        "threshold": threshold,
        "min_tools": min_tools,
        "passed": bool(report["verified"]),
        "summary": report.get("summary", ""),
    }
    if verified.rejected_tools is not None:
        facts["rejected"] = len(verified.rejected_tools)
        facts["rejected_tools"] = verified.rejected_tools
    return facts


def tool_kinds(toolset: ToolSet) -> dict[str, int]:
    """Read and write tools among a tool set (the tools stage's yield)."""
    kinds = list(toolset.kinds.values())
    return {"read": kinds.count("read"), "write": kinds.count("write")}
