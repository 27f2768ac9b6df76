"""Complexification as a build: a published environment's database grows (more rows, edge cases,
cross-table links) and becomes a new version through the same stages as every build.

Its own stages: ingest copies the parent's state with its provenance and complexifies it in
place; tools are designed again over the grown database (schema tools, plus LLM domain tools
when one is configured). Schema, verify and publish are the shared stages, so the new version
records its yield like any other build.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.discovery.complexify import RoundRecord, complexify
from environments.discovery.sources import read_provenance
from environments.discovery.sources.base import restore_provenance

from .pipeline import design_tools
from .request import EnvironmentSpec
from .stage_results import BuildOutcome, IngestResult, Progress, ToolsResult, quiet
from .stages import OriginStages, StageCallback, database_facts, run_stages


@dataclass(frozen=True)
class GrowthPlan:
    """How much the database grows: rounds, rows per table, the seed, and which tables
    (None: all)."""

    rounds: int = 1
    rows_per_table: int = 5
    seed: int = 0
    tables: frozenset[str] | None = None


@dataclass(frozen=True)
class ParentPackage:
    """The version that grows: its label, its package's state database and its provenance."""

    label: str
    state_path: Path
    provenance: list[dict[str, Any]]


@dataclass
class Growth:
    """What the rounds added, per table."""

    records: list[RoundRecord] = field(default_factory=list)

    @property
    def rows_added(self) -> dict[str, int]:
        added: dict[str, int] = {}
        for record in self.records:
            for table, count in record.added_rows.items():
                added[table] = added.get(table, 0) + count
        return added

    @property
    def edge_cases(self) -> dict[str, int]:
        cases: dict[str, int] = {}
        for record in self.records:
            for case in record.edge_cases:
                table = case.split(".")[0]
                cases[table] = cases.get(table, 0) + 1
        return cases


class ComplexifyStages(OriginStages):
    """Ingest and tools for a complexified version of a published environment."""

    def __init__(
        self,
        spec: EnvironmentSpec,
        parent: ParentPackage,
        plan: GrowthPlan,
        workdir: Path,
        llm: Any = None,
    ):
        super().__init__(spec)
        self.parent = parent
        self.plan = plan
        self.workdir = workdir
        self.llm = llm
        self.growth = Growth()

    def ingest(self, progress: Progress) -> IngestResult:
        db_path = self.workdir / "state.sqlite"
        shutil.copyfile(self.parent.state_path, db_path)
        restore_provenance(db_path, self.parent.provenance)
        progress(0.2, f"complexifying {self.parent.label}")
        self.growth.records = complexify(
            db_path,
            rounds=self.plan.rounds,
            rows_per_table=self.plan.rows_per_table,
            seed=self.plan.seed,
            only_tables=set(self.plan.tables) if self.plan.tables is not None else None,
        )
        progress(1.0, f"complexified in {len(self.growth.records)} round(s)")
        provenance = read_provenance(db_path)
        facts = {
            "complexified_from": self.parent.label,
            "rounds": len(self.growth.records),
            **database_facts(db_path, provenance),
            "rows_added": self.growth.rows_added,
            "edge_cases": self.growth.edge_cases,
        }
        return IngestResult(db_path, provenance, facts)

    def tools(self, ingested: IngestResult, progress: Progress) -> ToolsResult:
        return design_tools(ingested.db_path, self.spec.title, self.llm, None, progress)


def run_complexify(
    spec: EnvironmentSpec,
    parent: ParentPackage,
    plan: GrowthPlan,
    *,
    root: str | Path,
    workdir: str | Path,
    llm: Any = None,
    pool: Any = None,
    progress: Progress = quiet,
    on_stage: StageCallback | None = None,
) -> tuple[BuildOutcome, Growth]:
    """All five stages for a complexified version. Raises BuildFailed naming the stage."""
    stages = ComplexifyStages(spec, parent, plan, Path(workdir), llm)
    outcome = run_stages(stages, root=root, pool=pool, progress=progress, on_stage=on_stage)
    return outcome, stages.growth
