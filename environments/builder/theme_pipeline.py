"""A theme becomes an environment: the build stages for origins `theme` and `mcp`.

The same five stages as every build (ingest -> schema -> tools -> verify -> publish), each
recording what survived it on `Environment.build_yield`, plus a `funnel` summary (theme tools ->
schema entities -> tools implemented -> tools verified; tasks synthesized is read from the
environment when it is shown):

- ingest: the theme is read into entities and tool plans (`theme_model`), and the database is
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

from collections.abc import Callable
from pathlib import Path
from typing import Any

from environments.discovery.sources import mine_sources

from . import pipeline
from .pipeline import BuildFailed, BuildOutcome, Progress, _quiet
from .request import BuildRequest, CategoryPath, builtin_source
from .theme_data import build_theme_database, builtin_matches, candidate_tables
from .theme_model import ThemeModel, read_theme
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


def run_theme_pipeline(
    request: BuildRequest,
    theme: dict,
    *,
    root: str | Path,
    workdir: str | Path,
    version: int | None = None,
    llm: Any = None,
    pool: Any = None,
    progress: Progress = _quiet,
    on_stage: Callable[[str, dict[str, Any]], None] | None = None,
) -> BuildOutcome:
    """All five stages for one theme. Raises BuildFailed naming the stage that failed."""
    workdir = Path(workdir)
    build_yield: dict[str, Any] = {}
    spec = request.spec()
    spec["datasets"] = []
    if version is not None:
        spec["version"] = version
    notes: dict[str, Any] = {"theme": theme, "llm": {}}

    def span(stage: str) -> Progress:
        start, end = pipeline.STAGE_SPANS[stage]
        return lambda fraction, message="": progress(start + (end - start) * fraction, message)

    def done(stage: str, values: dict[str, Any]) -> None:
        build_yield[stage] = values
        build_yield["funnel"] = funnel(build_yield)
        if notes["llm"]:
            build_yield["llm"] = dict(notes["llm"])
        if on_stage is not None:
            on_stage(stage, dict(build_yield))

    def step(stage: str, function: Callable[[], Any]) -> Any:
        try:
            return function()
        except BuildFailed:
            raise
        except Exception as exc:
            raise BuildFailed(stage, f"{type(exc).__name__}: {exc}", build_yield) from exc

    # ingest: read the theme, fill the database
    def ingest() -> dict[str, Any]:
        span("ingest")(0.05, f"reading the theme {theme_label(theme)}")
        model = read_theme(theme)
        if not model.entities:
            return {"model": model, "db": None}
        candidates = gather_candidates(request, model, workdir, llm, notes)
        span("ingest")(0.6, f"{len(model.entities)} entities; filling the database")
        db = build_theme_database(
            model,
            workdir / f"{spec['name']}.sqlite",
            candidates,
            rows=request.options.rows,
            seed=theme.get("name") or spec["name"],
        )
        return {"model": model, "db": db}

    ingested = step("ingest", ingest)
    model: ThemeModel = ingested["model"]
    rejected = [{"name": p.name, "reason": p.rejected, "stage": "theme"} for p in model.rejected]
    theme_yield = {
        "theme": theme.get("name", ""),
        "source_kind": theme.get("source_kind", ""),
        "theme_tools": len(model.plans),
        "entities": len(model.entities),
    }
    if ingested["db"] is None:
        done("ingest", {**theme_yield, "tables": 0, "rows": 0, "rejected_tools": rejected})
        raise BuildFailed(
            "ingest",
            "nothing in the theme can be implemented offline: no entity could be read from it"
            + "".join(f"\n- {r['name']}: {r['reason']}" for r in rejected),
            build_yield,
        )
    db = ingested["db"]
    db_path = db["db_path"]
    ingest_values = pipeline.ingest_yield(spec, db_path, db["provenance"])
    ingest_values.update(theme_yield)
    ingest_values["synthetic_tables"] = db["synthetic_tables"]
    ingest_values["matched_tables"] = db["matched"]
    done("ingest", ingest_values)

    def schema() -> dict[str, Any]:
        values = pipeline.schema_yield(db_path)
        if not spec["category"]:
            spec["category"] = pipeline.classify_database(spec, db_path).as_dict()
            values["category_classified"] = True
        values["category"] = spec["category"]
        values["entities"] = {e.table: e.origins[:3] for e in model.entities.values()}
        return values

    done("schema", step("schema", schema))

    def tools() -> dict[str, Any]:
        span("tools")(0.1, "implementing the theme's tools")
        offline = implement_theme_tools(model, db_path)
        designed = None
        if llm is not None:
            span("tools")(0.5, "asking the LLM to design the theme's tools")
            designed = design_with_llm(llm, db_path, theme, model, notes)
        return {"offline": offline, "llm": designed}

    designed = step("tools", tools)
    offline, llm_tools = designed["offline"], designed["llm"]
    rejected = [{"name": p.name, "reason": p.rejected, "stage": "theme"} for p in model.rejected]
    for problem in (notes["llm"].get("design") or {}).get("problems", []):
        name, _, reason = problem.partition(": ")
        rejected.append(
            {"name": name, "reason": f"LLM tool rejected before running: {reason}", "stage": "llm"}
        )
    done(
        "tools",
        {
            "theme_tools": len(model.plans),
            "implemented": len(offline.names()),
            "rejected_offline": len(model.rejected),
            "llm_tools": len(llm_tools.names()) if llm_tools is not None else 0,
            "generated": len(offline.names()) + (len(llm_tools.names()) if llm_tools else 0),
            "read": sum(1 for k in offline.kinds.values() if k == "read"),
            "write": sum(1 for k in offline.kinds.values() if k == "write"),
        },
    )
    if not offline.names() and not (llm_tools and llm_tools.names()):
        raise BuildFailed(
            "tools",
            "no theme tool could be implemented"
            + "".join(f"\n- {r['name']}: {r['reason']}" for r in rejected),
            build_yield,
        )

    checked = step(
        "verify",
        lambda: pipeline.verify_environment(
            spec["name"],
            db_path,
            offline.as_dict(),
            llm_tools.as_dict() if llm_tools is not None else None,
            spec["category"],
            threshold=request.options.threshold,
            min_tools=request.min_tools,
            pool=pool,
            progress=span("verify"),
        ),
    )
    report = checked["report"]
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
    report["theme"] = {"name": theme.get("name", ""), "source_kind": theme.get("source_kind", "")}
    if notes["llm"]:
        report["llm"] = notes["llm"]
    done(
        "verify",
        {
            "tested": len(report.get("verdicts", [])),
            "verified": len(report["verified_tools"]),
            "rejected": len(rejected),
            "threshold": request.options.threshold,
            "min_tools": request.min_tools,
            "passed": bool(report["verified"]),
            "summary": report.get("summary", ""),
            "rejected_tools": rejected,
        },
    )
    explanation = checked["explanation"] + "".join(
        f"\n- {r['name']} ({r['stage']}): {r['reason']}" for r in rejected
    )
    if not report["verified"]:
        failed = BuildFailed("verify", explanation[:5000], build_yield)
        failed.report = report
        raise failed
    kept = checked["tools"]
    origins = {
        name: ("llm" if origin == "llm" else "imported") for name, origin in kept["origin"].items()
    }
    order = [p.name for p in model.plans if p.name in kept["functions"]]
    kept["functions"] = {n: kept["functions"][n] for n in order}
    extra = {
        "theme": {
            "name": theme.get("name", ""),
            "title": theme.get("title", ""),
            "source_kind": theme.get("source_kind", ""),
            "provenance": theme.get("provenance", {}),
        },
        "tool_origins": {n: origins[n] for n in order if n in report["verified_tools"]},
        "rejected_tools": rejected,
    }
    path = step(
        "publish",
        lambda: pipeline.publish(root, spec, db_path, kept, report, span("publish"), extra),
    )
    done(
        "publish",
        {"path": path, "version": int(Path(path).name[1:]), "tools": len(report["verified_tools"])},
    )
    return BuildOutcome(path, report, explanation, spec["category"], build_yield)


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
