"""A theme becomes an environment: the build stages for origins `theme` and `mcp`.

`ThemeStages` brings the theme's own ingest and tools stages to the one stage runner
(`stages.run_stages`), which runs them with the shared schema, verify and publish stages and
records what survived each on `Environment.build_yield`; a theme also keeps a `funnel` summary
there (theme tools -> schema entities -> tools implemented -> tools verified; tasks synthesized is
read from the environment when it is shown):

- ingest: the theme is read into entities and tool plans (`theme_reading`), and the database is
  filled from the closest local data (a built-in source that names an entity, the one the
  request names, an uploaded file, and with an LLM the research agent's tables) or else from the
  deterministic generator (provenance kind "synthetic");
- tools: every implementable theme tool as code with tests (`theme_tools`); with an LLM the
  tool-design agent writes the same tools with business rules and tests;
- verify: everything in the sandbox; where the LLM and the offline implementation both exist
  each one's tests also run against the other (cross-check); a tool the offline path could not
  implement is listed as rejected with its reason;
- publish: only verified tools, only with at least `min_tools` of them; the manifest keeps the
  theme's tool surface, which tools came from where and every rejected tool with its reason.

LLM failures (endpoint errors, unusable answers, unsafe or broken code) are recorded in the
yield (`llm`) and on the job; the offline implementation stands and the report says so.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from environments.discovery.sources import mine_sources
from environments.tool_operations import ParamBinding, ToolOperation, binding_columns

from .request import BuildRequest, CategoryPath, builtin_source
from .stage_results import BuildOutcome, IngestResult, Progress, ToolsResult, VerifyResult, quiet
from .stages import (
    OriginStages,
    StageCallback,
    StageRefused,
    database_facts,
    run_stages,
    tool_kinds,
)
from .theme_contract import ToolContract, check_rows, run_contracts
from .theme_data import build_theme_database, builtin_matches, candidate_tables
from .theme_model import ThemeModel, ToolPlan
from .theme_reading import read_theme
from .theme_tools import implement_theme_tools


def theme_label(theme: dict) -> str:
    return theme.get("title") or theme.get("name") or "theme"


def gather_candidates(
    request: BuildRequest, model: ThemeModel, workdir: Path, llm: Any, notes: dict
) -> list:
    """Local tables that may give the theme's entities their rows."""
    candidates = []
    choice = request.options.data_source
    names = [] if choice == "none" else ([choice] if choice else builtin_matches(model))
    for name in names[:3]:
        spec = builtin_source(name)
        db = mine_sources(workdir / f"source_{name}.sqlite", datasets=spec["datasets"])
        candidates += candidate_tables(db, f"built-in source {name}", "package")
    if request.files:
        db = mine_sources(workdir / "upload.sqlite", files=[Path(f) for f in request.files])
        candidates += candidate_tables(
            db, f"upload {request.filename or Path(request.files[0]).name}", "file"
        )
    if llm is not None:
        from environments.discovery.research_agent import run_research

        topic = f"{theme_label(notes['theme'])}: " + ", ".join(
            f"{e.table} ({', '.join(n for n, f in e.fields.items() if not f.hidden)})"
            for e in model.entities.values()
        )
        try:
            found = run_research(llm, topic[:1500], workdir / "research.sqlite")
        except Exception as exc:  # noqa: BLE001 - reported, never silently replaced
            notes["llm"]["research"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        else:
            if found.error or found.db_path is None:
                notes["llm"]["research"] = {"ok": False, "error": found.error, "steps": found.steps}
            else:
                notes["llm"]["research"] = {
                    "ok": True,
                    "tables": found.tables,
                    "steps": found.steps,
                }
                candidates += candidate_tables(found.db_path, "research agent", "web")
    return candidates


def design_with_llm(llm: Any, db_path: str, theme: dict, model: ThemeModel, notes: dict):
    """The tool-design agent's version of every theme tool, or None (the reason in notes)."""
    from environments.discovery.tool_design_agent import design_theme_tools

    try:
        tools, problems = design_theme_tools(llm, db_path, theme, model.plans)
    except Exception as exc:  # noqa: BLE001 - reported on the job and the environment
        notes["llm"]["design"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        return None
    notes["llm"]["design"] = {"ok": True, "tools": tools.names(), "problems": problems}
    return tools


class ThemeStages(OriginStages):
    """Ingest and tools for a theme: its entities over the closest local data, its tools as
    code; the verification lists every theme tool that fell and why."""

    def __init__(
        self,
        request: BuildRequest,
        theme: dict,
        workdir: Path,
        version: int | None,
        llm: Any,
        pool: Any = None,
    ):
        super().__init__(request.environment_spec(version))
        self.pool = pool
        self.db_path: Path | None = None
        self.request = request
        self.theme = theme
        self.workdir = workdir
        self.llm = llm
        self.notes: dict[str, Any] = {"theme": theme, "llm": {}}
        self.model: ThemeModel | None = None
        self.rejected: list[dict[str, str]] = []

    def ingest(self, progress: Progress) -> IngestResult:
        """Read the theme into entities and tool plans, then fill its database."""
        theme, spec = self.theme, self.spec
        progress(0.05, f"reading the theme {theme_label(theme)}")
        model = self.model = read_theme(theme)
        self.rejected = [rejected_entry(p) for p in model.rejected]
        theme_facts = {
            "theme": theme.get("name", ""),
            "source_kind": theme.get("source_kind", ""),
            "theme_tools": len(model.plans),
            "entities": len(model.entities),
        }
        if not model.entities:
            raise StageRefused(
                "nothing in the theme can be implemented offline: no entity could be read from it"
                + "".join(f"\n- {r['name']}: {r['reason']}" for r in self.rejected),
                {**theme_facts, "tables": 0, "rows": 0, "rejected_tools": self.rejected},
            )
        candidates = gather_candidates(self.request, model, self.workdir, self.llm, self.notes)
        progress(0.6, f"{len(model.entities)} entities; filling the database")
        db = build_theme_database(
            model,
            self.workdir / f"{spec.name}.sqlite",
            candidates,
            rows=self.request.options.rows,
            seed=theme.get("name") or spec.name,
        )
        facts = {
            "files": [Path(f).name for f in self.request.files],
            "datasets": [],
            **database_facts(db["db_path"], db["provenance"]),
            **theme_facts,
            "synthetic_tables": db["synthetic_tables"],
            "matched_tables": db["matched"],
        }
        self.db_path = Path(db["db_path"])
        return IngestResult(self.db_path, db["provenance"], facts)

    def label(self) -> str:
        source = Path(str((self.theme.get("provenance") or {}).get("source") or "")).name
        kind = self.theme.get("source_kind", "")
        return f"the theme {theme_label(self.theme)!r}" + (
            f" ({kind} {source})" if source else f" ({kind})"
        )

    def schema_facts(self, ingested: IngestResult) -> dict[str, Any]:
        assert self.model is not None
        return {"entities": {e.table: e.origins[:3] for e in self.model.entities.values()}}

    def tools(self, ingested: IngestResult, progress: Progress) -> ToolsResult:
        """Every implementable theme tool as code with tests; the LLM's version too."""
        model = self.model
        assert model is not None
        progress(0.1, "implementing the theme's tools")
        offline = implement_theme_tools(model, ingested.db_path)
        listed = {r["name"] for r in self.rejected}  # and those that fell writing their code
        self.rejected += [rejected_entry(p) for p in model.rejected if p.name not in listed]
        designed = None
        if self.llm is not None:
            progress(0.5, "asking the LLM to design the theme's tools")
            designed = design_with_llm(
                self.llm, str(ingested.db_path), self.theme, model, self.notes
            )
        for problem in (self.notes["llm"].get("design") or {}).get("problems", []):
            name, _, reason = problem.partition(": ")
            self.rejected.append(
                {
                    "name": name,
                    "reason": f"LLM tool rejected before running: {reason}",
                    "stage": "llm",
                }
            )
        llm_count = len(designed.names()) if designed is not None else 0
        facts = {
            "theme_tools": len(model.plans),
            "implemented": len(offline.names()),
            "rejected_offline": len(model.rejected),
            "llm_tools": llm_count,
            "generated": len(offline.names()) + llm_count,
            **tool_kinds(offline),
        }
        if not offline.names() and not llm_count:
            raise StageRefused(
                "no theme tool could be implemented"
                + "".join(f"\n- {r['name']}: {r['reason']}" for r in self.rejected),
                facts,
            )
        return ToolsResult(offline, designed, facts)

    def review(self, verified: VerifyResult) -> VerifyResult:
        """Theme tools are reported as such; every tool that fell is listed with its reason;
        the kept tools follow the theme's order."""
        assert self.model is not None
        verified = self.check_contracts(verified)
        report, rejected = verified.report, self.rejected
        for verdict in report.get("verdicts", []):
            if verdict.get("origin") == "schema":
                verdict["origin"] = "theme"
            if not verdict.get("verified") and not any(
                r["name"] == verdict["name"] and r["stage"] == verdict["origin"] for r in rejected
            ):
                rejected.append(
                    {
                        "name": verdict["name"],
                        "reason": "; ".join(verdict.get("reasons") or []) or "not verified",
                        "stage": verdict["origin"],
                    }
                )
        verified_names = set(report["verified_tools"])
        rejected = [r for r in rejected if r["name"] not in verified_names or r["stage"] == "llm"]
        report["rejected_tools"] = rejected
        report["tool_notes"] = {p.name: p.notes for p in self.model.plans if p.notes}
        report["theme"] = {
            "name": self.theme.get("name", ""),
            "source_kind": self.theme.get("source_kind", ""),
        }
        if self.notes["llm"]:
            report["llm"] = self.notes["llm"]
        explanation = verified.explanation + "".join(
            f"\n- {r['name']} ({r['stage']}): {r['reason']}" for r in rejected
        )
        kept = verified.kept
        order = [p.name for p in self.model.plans if p.name in kept.functions]
        kept = replace(kept, functions={n: kept.functions[n] for n in order})
        return VerifyResult(report, explanation, kept, rejected)

    def check_contracts(self, verified: VerifyResult) -> VerifyResult:
        """Every kept tool against its document (`theme_contract`), in the sandbox on the
        environment's rows; one whose contract fails is not verified, whatever its accuracy.
        The database is checked against the document's enums, patterns, formats and references
        once. The checks are kept on each tool's verdict and on the report."""
        assert self.model is not None and self.db_path is not None
        report, kept = verified.report, verified.kept
        contracts: dict[str, ToolContract] = run_contracts(
            kept, self.model, self.db_path, self.spec.name, pool=self.pool
        )
        data = check_rows(self.model, self.db_path)
        report["contract"] = {
            "data": {"name": data.name, "passed": data.passed, "detail": data.detail},
            "tools": {name: c.as_dict() for name, c in contracts.items()},
        }
        failed = {name for name, c in contracts.items() if not c.passed}
        for verdict in report.get("verdicts", []):
            contract = contracts.get(verdict.get("name"))
            if contract is None or not verdict.get("verified"):
                continue
            verdict["contract"] = contract.as_dict()
            if not contract.passed:
                verdict["verified"] = False
                verdict.setdefault("reasons", []).extend(contract.failures)
        if failed:
            kept = replace(
                kept,
                functions={n: f for n, f in kept.functions.items() if n not in failed},
            )
            for attribute in ("schemas", "kinds", "tests", "origin"):
                setattr(
                    kept,
                    attribute,
                    {n: v for n, v in getattr(kept, attribute).items() if n not in failed},
                )
        report["verified_tools"] = [
            v["name"] for v in report.get("verdicts", []) if v.get("verified")
        ]
        count = len(kept.names())
        report["verified"] = count >= self.request.min_tools
        report["summary"] = (
            f"{self.spec.name}: {count} of {len(report.get('verdicts', []))} tools verified "
            f"(threshold {report.get('threshold')}; document contract checked"
            + (f", {len(failed)} broke it" if failed else "")
            + ")"
            + ("; environment verified" if report["verified"] else "")
            + ("" if report["verified"] else f"; needs at least {self.request.min_tools}")
        )
        explanation = report["summary"] + verified.explanation.partition("\n")[1]
        explanation += verified.explanation.partition("\n")[2]
        if not data.passed:
            explanation += f"\n- generated data: {data.detail}"
        return VerifyResult(report, explanation, kept, verified.rejected_tools)

    def manifest_extra(self, verified: VerifyResult) -> dict[str, Any]:
        kept, verified_tools = verified.kept, set(verified.report["verified_tools"])
        origins = {n: ("llm" if o == "llm" else "imported") for n, o in kept.origin.items()}
        return {
            "theme": {
                "name": self.theme.get("name", ""),
                "title": self.theme.get("title", ""),
                "source_kind": self.theme.get("source_kind", ""),
                "provenance": self.theme.get("provenance", {}),
            },
            "tool_origins": {n: origins[n] for n in kept.names() if n in verified_tools},
            "original_names": {
                p.name: p.original_name
                for p in (self.model.plans if self.model else [])
                if p.original_name and p.name in verified_tools
            },
            "tool_notes": {
                name: notes
                for name, notes in verified.report.get("tool_notes", {}).items()
                if name in verified_tools
            },
            "rejected_tools": verified.rejected_tools or [],
            "tool_operations": {
                p.name: plan_operation(p, self.model).to_dict()
                for p in (self.model.plans if self.model else [])
                if p.name in verified_tools and p.entity in self.model.entities
            },
            "contracts": {
                name: contract["summary"]
                for name, contract in (verified.report.get("contract") or {})
                .get("tools", {})
                .items()
                if name in verified_tools
            },
            "data_contract": ((verified.report.get("contract") or {}).get("data") or {}).get(
                "detail", ""
            ),
        }

    def summary(self, build_yield: dict[str, Any]) -> dict[str, Any]:
        """The funnel so far and what the LLM did, kept on the yield after every stage."""
        kept: dict[str, Any] = {"funnel": funnel(build_yield)}
        if self.notes["llm"]:
            kept["llm"] = dict(self.notes["llm"])
        return kept


SINGLE_ROW_OPERATIONS = {"get", "get_by_fields", "create", "update", "transition", "delete"}
ROWLESS_OUTPUTS = {"text", "status", "multi"}  # answers that hold no plain rows


def plan_operation(plan: ToolPlan, model: ThemeModel) -> ToolOperation:
    """What a published tool does, for the manifest: task synthesis reads it (its table, the
    column each parameter binds, where its answer holds the rows) instead of the tool's name."""
    entity = model.entities[plan.entity]
    envelope = plan.envelope
    mode = (plan.output or {}).get("mode", "plain")
    rows_at: tuple[str, ...] | None = ()
    many = plan.operation not in SINGLE_ROW_OPERATIONS
    if envelope is not None and mode == "envelope":
        rows_at, many = tuple(envelope.rows), envelope.many
    elif mode == "wrap" and plan.output.get("prop"):
        rows_at, many = (str(plan.output["prop"]),), True
    elif mode in ROWLESS_OUTPUTS or plan.operation in ("delete", "batch_delete"):
        rows_at = None  # a status or a count of what was removed, no row
    return ToolOperation(
        operation=plan.operation,
        table=entity.table,
        key=entity.key,
        params={
            name: ParamBinding(str(binding[0]), binding_columns(binding))
            for name, binding in plan.bindings.items()
            if binding
        },
        rows_at=rows_at,
        many=many,
    )


def rejected_entry(plan: ToolPlan) -> dict[str, str]:
    """A theme tool that fell, as the yield and the report list it."""
    entry = {"name": plan.name, "reason": plan.rejected, "stage": "theme"}
    if plan.original_name:
        entry["original_name"] = plan.original_name
    return entry


def run_theme_pipeline(
    request: BuildRequest,
    theme: dict,
    *,
    root: str | Path,
    workdir: str | Path,
    version: int | None = None,
    llm: Any = None,
    pool: Any = None,
    progress: Progress = quiet,
    on_stage: StageCallback | None = None,
) -> BuildOutcome:
    """All five stages for one theme. Raises BuildFailed naming the stage that failed."""
    stages = ThemeStages(request, theme, Path(workdir), version, llm, pool)
    return run_stages(
        stages,
        root=root,
        threshold=request.options.threshold,
        min_tools=request.min_tools,
        pool=pool,
        progress=progress,
        on_stage=on_stage,
    )


def funnel(build_yield: dict[str, Any]) -> dict[str, Any]:
    """Theme tools -> schema entities -> tools implemented -> tools verified (so far)."""
    ingest = build_yield.get("ingest") or {}
    tools = build_yield.get("tools") or {}
    verify = build_yield.get("verify") or {}
    return {
        "theme_tools": ingest.get("theme_tools"),
        "schema_entities": ingest.get("entities"),
        "tools_implemented": tools.get("implemented") if tools else None,
        "tools_verified": verify.get("verified") if verify else None,
    }


def category_of(request: BuildRequest, theme_category: str) -> CategoryPath | None:
    """The request's category, else the theme's ("Primary > Secondary > Tertiary")."""
    if request.category is not None:
        return request.category
    if not theme_category:
        return None
    try:
        return CategoryPath.parse("/".join(theme_category.split(" > ")))
    except Exception:  # noqa: BLE001 - a theme classified outside the taxonomy
        return None
