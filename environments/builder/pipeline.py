"""Builds from data: a built-in source's package datasets or uploaded files (origins `source`
and `upload`).

Their own stages: ingest mines the data into one SQLite database (`mine_sources`), tools are the
schema-driven read/query/write tools plus, with an LLM configured, its domain tools. Schema,
verify and publish are the shared stages of `stages.run_stages`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from environments.discovery.sources import mine_sources, read_provenance
from environments.discovery.tool_generator import ToolSet, generate_tools

from .request import BuildRequest, EnvironmentSpec
from .stage_results import BuildOutcome, IngestResult, Progress, ToolsResult, quiet
from .stages import (
    OriginStages,
    StageCallback,
    StageRefused,
    database_facts,
    run_stages,
    tool_kinds,
)


def mine_database(
    name: str,
    workdir: str | Path,
    files: list[Path],
    datasets: list[str],
    progress: Progress = quiet,
) -> IngestResult:
    """Real data (package datasets, files) into one SQLite database (atomic)."""
    progress(0.1, f"mining {name}")
    target = Path(workdir) / f"{name}.sqlite"
    target.unlink(missing_ok=True)
    db_path = mine_sources(target, files=files, datasets=datasets)
    provenance = read_provenance(db_path)
    facts = {
        "files": [f.name for f in files],
        "datasets": list(datasets),
        **database_facts(db_path, provenance),
    }
    progress(1.0, f"mined {name}")
    return IngestResult(Path(db_path), provenance, facts)


def design_tools(
    db_path: str | Path,
    label: str,
    llm_settings: Any = None,
    theme: dict | None = None,
    progress: Progress = quiet,
) -> ToolsResult:
    """Schema-driven tools, plus LLM domain tools when an LLM is configured."""
    progress(0.1, "generating schema tools")
    schema_tools = generate_tools(db_path, label)
    llm_tools: ToolSet | None = None
    if llm_settings is not None:
        from environments.discovery.tool_design_agent import design_domain_tools

        progress(0.5, "asking the LLM for domain tools")
        llm_tools = design_domain_tools(llm_settings, db_path, theme or {"title": label})
    progress(1.0, f"{len(schema_tools.names())} schema tools")
    llm_count = len(llm_tools.names()) if llm_tools is not None else 0
    facts = {
        "generated": len(schema_tools.names()) + llm_count,
        "schema_tools": len(schema_tools.names()),
        "llm_tools": llm_count,
        **tool_kinds(schema_tools),
    }
    if not facts["generated"]:
        raise StageRefused("no tools could be generated from the schema", facts)
    return ToolsResult(schema_tools, llm_tools, facts)


class DataStages(OriginStages):
    """Ingest and tools for a build from data files and package datasets."""

    def __init__(
        self,
        spec: EnvironmentSpec,
        workdir: str | Path,
        files: list[Path],
        datasets: list[str],
        llm: Any = None,
    ):
        super().__init__(spec)
        self.workdir = Path(workdir)
        self.files = files
        self.datasets = datasets
        self.llm = llm

    def ingest(self, progress: Progress) -> IngestResult:
        return mine_database(self.spec.name, self.workdir, self.files, self.datasets, progress)

    def tools(self, ingested: IngestResult, progress: Progress) -> ToolsResult:
        theme = {"title": self.spec.title, "description": self.spec.description}
        return design_tools(ingested.db_path, self.spec.title, self.llm, theme, progress)


def run_pipeline(
    request: BuildRequest,
    *,
    root: str | Path,
    workdir: str | Path,
    version: int | None = None,
    llm: Any = None,
    pool: Any = None,
    progress: Progress = quiet,
    on_stage: StageCallback | None = None,
) -> BuildOutcome:
    """All five stages for a source or upload request. Raises BuildFailed naming the stage."""
    stages = DataStages(
        request.environment_spec(version),
        workdir,
        files=[Path(f) for f in request.files],
        datasets=request.datasets,
        llm=llm,
    )
    return run_stages(
        stages,
        root=root,
        threshold=request.options.threshold,
        min_tools=request.min_tools,
        pool=pool,
        progress=progress,
        on_stage=on_stage,
    )
