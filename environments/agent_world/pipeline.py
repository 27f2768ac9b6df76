"""The build of one released environment (origin `agent_world`) through the shared stage runner.

The stages are the five every build has, with the same progress spans, yields and failures
(`stages.StageRunner`, `BuildFailed` naming the stage), over a folder of JSON collections
instead of an SQLite database:

- ingest:  read the environment from the release (release.py); a malformed one is refused
- schema:  each collection's kind and key; the release's taxonomy kept and mapped onto ours
- tools:   the released tools whose code parses, written as a candidate package
- verify:  every tool run in the sandbox on real rows (verify.py); log collections found
- publish: the verified tools, the collections byte for byte, README and manifest
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from environments.builder.publish import next_version_on_disk
from environments.builder.request import BuildRequest
from environments.builder.stage_results import BuildOutcome, Progress, quiet
from environments.builder.stages import StageCallback, StageRefused, StageRunner

from .package import CollectionPlan, collection_keys, write_collection_package
from .release import ReleaseEnvironment, ReleaseError, mix_directory, read_environment
from .taxonomy import map_taxonomy
from .verify import ReleaseVerification, verify_release_tools


def run_agent_world_pipeline(
    request: BuildRequest,
    *,
    root: str | Path,
    workdir: str | Path,
    version: int | None = None,
    pool: Any = None,
    progress: Progress = quiet,
    on_stage: StageCallback | None = None,
    now: datetime | None = None,
) -> BuildOutcome:
    """All five stages for one released environment. Raises BuildFailed naming the stage.
    `now` fixes the version's frozen clock (default: the time of the build)."""
    label = f"the released environment {request.env_id} of {request.release}"
    runner = StageRunner(progress, on_stage, label=label)
    version = version or next_version_on_disk(Path(root), request.name)
    clock = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    clock_text = clock.isoformat().replace("+00:00", "Z")

    environment = runner.run("ingest", lambda span: ingest(request, span))
    runner.record("ingest", ingest_facts(environment, request.release))

    category, reason = request.category, "named by the build request"
    if category is None:
        category, reason = map_taxonomy(environment)
    runner.record(
        "schema",
        {
            "tables": len(environment.collections),
            "collections": collection_keys(environment),
            "category": category.as_dict(),
            "category_reason": reason,
            "release_taxonomy": environment.taxonomy.as_dict(),
        },
    )

    def plan(tools: tuple, kinds: dict[str, str], logs: tuple[str, ...]) -> CollectionPlan:
        return CollectionPlan(
            name=request.name,
            version=version,
            title=request.title or environment.name,
            description=request.description or environment.description,
            category=category.as_dict(),
            tools=tools,
            tool_kinds=kinds,
            log_collections=logs,
            clock=clock_text,
            release_path=request.release,
        )

    def candidate(span: Progress) -> Path:
        if not environment.tools:
            raise StageRefused("no released tool's code parses", tools_facts(environment))
        span(0.5, f"{len(environment.tools)} released tools to verify")
        return write_collection_package(
            Path(workdir) / "candidate", environment, plan(environment.tools, {}, ())
        )

    candidate_path = runner.run("tools", candidate)
    runner.record("tools", tools_facts(environment))

    min_tools = request.min_tools

    def verify(span: Progress) -> ReleaseVerification:
        span(0.05, f"running {len(environment.tools)} released tools in the sandbox")
        if pool is not None:
            return verify_release_tools(environment, candidate_path, pool)
        from environments.runtime import SandboxPool

        with SandboxPool(workers=1) as own:
            return verify_release_tools(environment, candidate_path, own)

    verification = runner.run("verify", verify)
    report = verification.report(min_tools)
    runner.record("verify", verify_facts(verification, report, min_tools))
    if not report["verified"]:
        raise runner.failed("verify", verification.explain()[:5000], report)

    kept = tuple(t for t in environment.tools if t.name in set(report["verified_tools"]))
    kinds = {v.name: v.kind for v in verification.verdicts if v.verified}
    final = plan(kept, kinds, tuple(verification.log_collections))
    path = runner.run("publish", lambda span: write_collection_package(root, environment, final))
    runner.record("publish", {"path": str(path), "version": version, "tools": len(kept)})
    return BuildOutcome(
        str(path), report, verification.explain(), category.as_dict(), runner.build_yield
    )


def ingest(request: BuildRequest, progress: Progress) -> ReleaseEnvironment:
    progress(0.1, f"reading {request.env_id} from the release")
    try:
        environment = read_environment(mix_directory(request.release), request.env_id)
    except ReleaseError as exc:
        raise StageRefused(str(exc)) from None
    progress(1.0, f"{len(environment.collections)} collections, {environment.row_count} rows")
    return environment


def ingest_facts(environment: ReleaseEnvironment, release: str) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "release": release,
        "release_env_id": environment.env_id,
        "release_name": environment.name,
        "tables": len(environment.collections),
        "rows": environment.row_count,
        "rows_by_table": {c.name: c.row_count for c in environment.collections},
        "documents": [c.name for c in environment.collections if c.kind == "document"],
        "questions": len(environment.questions),
        "sources": len(environment.collections),
    }
    notes = list(environment.notes) + list(environment.question_problems)
    if notes:
        facts["notes"] = notes
    return facts


def tools_facts(environment: ReleaseEnvironment) -> dict[str, Any]:
    return {
        "generated": len(environment.tools) + len(environment.refused_tools),
        "released": len(environment.tools) + len(environment.refused_tools),
        "parsed": len(environment.tools),
        "refused": [{"tool": r.name, "reason": r.reason} for r in environment.refused_tools],
    }


def verify_facts(
    verification: ReleaseVerification, report: dict[str, Any], min_tools: int
) -> dict[str, Any]:
    """The verify stage's yield, in the shape of stages.verify_yield plus the logs found."""
    return {
        "tested": len(verification.verdicts),
        "verified": len(verification.verified_tools),
        "rejected": len(verification.verdicts) - len(verification.verified_tools),
        "rejected_tools": verification.rejected(),
        "rejected_by_reason": verification.rejected_by_reason(),
        "log_collections": verification.log_collections,
        "min_tools": min_tools,
        "passed": bool(report["verified"]),
        "summary": report["summary"],
    }
