"""Celery jobs of environment discovery: each wraps a stage in environments.discovery."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from aw_site.jobs import JobContext, interrupted, job
from aw_site.llm import llm_settings
from aw_site.models import Job
from environments.build_yield import origin_of
from environments.builder.publish import next_version_on_disk
from environments.builder.request import (
    THEME_ORIGINS,
    BuildRequest,
    CategoryPath,
    Origin,
    builtin_names,
    mcp_target,
)
from environments.builder.stages import BuildFailed
from environments.builder.submit import queue_build
from environments.builder.uploads import remove_upload
from environments.models import Environment, Theme
from environments.registry import record_package


def yield_fields(build_yield: dict[str, Any]) -> dict[str, Any]:
    """The build yield and the origin column read from it, written together."""
    origin = origin_of(build_yield)
    return {"build_yield": build_yield, "origin": "" if origin == "unrecorded" else origin}


def packages_root() -> Path:
    root = Path(settings.STORAGE_ROOT) / "environments"
    root.mkdir(parents=True, exist_ok=True)
    return root


@job("environments.build_catalogue")
def build_catalogue(
    ctx: JobContext, sources: list[str] | None = None, workers: int = 2
) -> dict[str, Any]:
    """Fan out one build job per source to the sandbox queue, so workers build in parallel."""
    names = sources or builtin_names()
    requests = [BuildRequest.for_source(name) for name in names]  # refuse unknown names first
    with transaction.atomic():
        children = [queue_build(request, ctx.job.created_by).pk for request in requests]
    ctx.progress(1.0, f"enqueued {len(children)} environment builds")
    return {"jobs": children}


@job("environments.build", queue=Job.Queue.SANDBOX)
def build(ctx: JobContext, **request: Any) -> dict[str, Any]:
    """The one build job (REST API, console, CLI, catalogue fan-out): a BuildRequest as JSON.

    A build that fails leaves a REJECTED row whose failure_reason names the stage, and fails
    the job with the same reason."""
    return run_build(ctx, BuildRequest.from_dict(request))


@job("environments.build_environment", queue=Job.Queue.SANDBOX)
def build_environment(ctx: JobContext, source: str) -> dict[str, Any]:
    """Deprecated alias of `environments.build` for one built-in source (jobs queued before the
    build entry point): an unverified build is recorded REJECTED and the job succeeds."""
    return run_build(ctx, BuildRequest.for_source(source), fail_on_reject=False)


def built_or_rejected(
    ctx: JobContext, request: BuildRequest, rejected_elsewhere: Callable[[], Any] = lambda: None
) -> Environment:
    """The environment one build of ``request`` ends with: the published one, or the draft the
    pipeline rejected with its reason (``rejected_elsewhere``: a final row found another way).
    Any other failure raises; an interrupted job's failure always does, so it is retried."""
    try:
        result = run_build(ctx, request)
    except Exception as exc:
        if interrupted(exc):
            raise
        draft = ctx.saved.get("draft_environment")
        rejected = (
            rejected_elsewhere()
            or Environment.objects.filter(pk=draft, status=Environment.Status.REJECTED).first()
        )
        if rejected is None:
            raise
        return rejected
    return Environment.objects.get(pk=result["environment"])


def run_build(
    ctx: JobContext, request: BuildRequest, fail_on_reject: bool = True
) -> dict[str, Any]:
    """Run the pipeline for one request on a draft row; adopt the package or reject the row.

    Whatever happens, the temp directory goes; the upload goes too unless this attempt was
    interrupted (the retry needs it). A package published but not recorded is removed."""
    discard_interrupted_draft(ctx)
    theme_row = None
    if request.origin in THEME_ORIGINS:
        try:
            theme_row, request = resolve_theme(ctx, request)
        except Exception as exc:
            if interrupted(exc):
                raise
            failed = Environment.objects.create(
                name=request.name,
                version=next_version(request.name),
                title=request.title or request.name,
                created_by=ctx.job.created_by,
            )
            reason = str(exc)
            if not reason.startswith("ingest stage failed"):
                reason = f"ingest stage failed: {type(exc).__name__}: {exc}"
            failed.transition(Environment.Status.REJECTED, reason=reason[:5000])
            ctx.checkpoint(draft_environment=failed.pk)
            raise ValueError(reason) from exc
    environment = draft_environment(request.spec(), created_by=ctx.job.created_by, theme=theme_row)
    ctx.checkpoint(draft_environment=environment.pk)
    workdir = Path(tempfile.mkdtemp(prefix=f"aw-build-{request.name}-"))
    final = True

    reported_llm: set[str] = set()

    def record_yield(stage_name: str, build_yield: dict[str, Any]) -> None:
        fields: dict[str, Any] = yield_fields(build_yield)
        for part, outcome in (build_yield.get("llm") or {}).items():
            if part not in reported_llm:
                reported_llm.add(part)
                if outcome.get("ok"):
                    ctx.log(f"LLM {part}: ok {_yield_line(outcome)}")
                else:
                    ctx.log(f"LLM {part} FAILED: {outcome.get('error')}")
            if (
                part == "design"
                and outcome.get("problems")
                and part + ":problems" not in reported_llm
            ):
                reported_llm.add(part + ":problems")
                ctx.log("LLM tools rejected:\n" + "\n".join(outcome["problems"][:50]))
        if stage_name == "schema" and environment.category_id is None:
            from environments.registry import category_for

            category = category_for({"category": build_yield["schema"]["category"]})
            fields["category"] = category
        Environment.objects.filter(pk=environment.pk).update(**fields)
        ctx.log(f"{stage_name}: {_yield_line(build_yield[stage_name])}")
        if stage_name == "tools":
            environment.refresh_from_db()
            environment.transition(Environment.Status.VERIFYING)

    try:
        environment.transition(Environment.Status.MINING)
        llm = llm_settings() if request.options.use_llm else None
        if theme_row is not None:
            from environments.builder.theme_pipeline import run_theme_pipeline
            from environments.themes_import import theme_dict

            outcome = run_theme_pipeline(
                request,
                theme_dict(theme_row),
                root=packages_root(),
                workdir=workdir,
                version=environment.version,
                llm=llm,
                progress=ctx.progress,
                on_stage=record_yield,
            )
        elif request.origin == Origin.AGENT_WORLD:
            from environments.agent_world.pipeline import run_agent_world_pipeline

            outcome = run_agent_world_pipeline(
                request,
                root=packages_root(),
                workdir=workdir,
                version=environment.version,
                progress=ctx.progress,
                on_stage=record_yield,
            )
        else:
            from environments.builder.pipeline import run_pipeline

            outcome = run_pipeline(
                request,
                root=packages_root(),
                workdir=workdir,
                version=environment.version,
                llm=llm,
                progress=ctx.progress,
                on_stage=record_yield,
            )
        ctx.log(outcome.explanation[:2000])
        recorded = adopt_draft(environment, outcome.path, outcome.report, outcome.build_yield)
        ctx.progress(1.0, f"published {recorded.label} with {recorded.tool_count} verified tools")
        announce_published(ctx, recorded, request)
        return {
            "environment": recorded.pk,
            "label": recorded.label,
            "verified": True,
            "tools": recorded.tool_count,
            "path": outcome.path,
            "build_yield": outcome.build_yield,
        }
    except BuildFailed as exc:
        if exc.__cause__ is not None and interrupted(exc.__cause__):
            final = False
            raise exc.__cause__ from None  # the retry discards this draft and builds again
        remove_unrecorded_package(packages_root() / request.name / f"v{environment.version}")
        reject_draft(environment, str(exc), exc.build_yield, exc.report)
        if exc.stage == "verify" and not fail_on_reject:
            return {"environment": environment.pk, "verified": False}
        raise
    except Exception as exc:
        if interrupted(exc):
            final = False
            raise  # the retry discards this draft and builds the version again
        remove_unrecorded_package(packages_root() / request.name / f"v{environment.version}")
        reject_draft(environment, f"publish stage failed: {type(exc).__name__}: {exc}")
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if final and request.upload_dir:
            remove_upload(request.upload_dir)


def announce_published(ctx: JobContext, environment: Environment, request: BuildRequest) -> None:
    """Tell the apps above (environment_published) that a version was published; a receiver
    that fails is logged on the job, never undoing the publish."""
    from environments.signals import environment_published

    answers = environment_published.send_robust(
        sender=Environment, environment=environment, options=request.options
    )
    for receiver, answer in answers:
        if isinstance(answer, Exception):
            ctx.log(f"after publishing, {receiver.__qualname__} failed: {answer}")


def _yield_line(values: dict[str, Any]) -> str:
    return ", ".join(
        f"{k} {v}" for k, v in values.items() if isinstance(v, int | float | str) and k != "path"
    )[:300]


def reject_draft(
    environment: Environment,
    reason: str,
    build_yield: dict[str, Any] | None = None,
    report: dict[str, Any] | None = None,
) -> None:
    """Mark an unfinished draft REJECTED with the reason (and what each stage yielded)."""
    environment.refresh_from_db()
    if environment.status not in UNFINISHED:
        return
    if build_yield is not None:
        environment.build_yield = build_yield
    if report is not None:
        environment.verification_report = report
    environment.transition(Environment.Status.REJECTED, reason=reason[:5000])


UNFINISHED = (Environment.Status.DRAFT, Environment.Status.MINING, Environment.Status.VERIFYING)


def discard_interrupted_draft(ctx: JobContext) -> None:
    """A retry after a lost worker starts clean: the earlier attempt's draft row and any package
    it wrote but never recorded are removed, so no half-built version survives and the rebuild
    takes the same version number."""
    draft_id = ctx.saved.get("draft_environment")
    draft = Environment.objects.filter(pk=draft_id, status__in=UNFINISHED).first()
    if draft is None:
        return
    remove_unrecorded_package(packages_root() / draft.name / f"v{draft.version}")
    ctx.log(f"discarded {draft.label} ({draft.status}) left unfinished by an earlier attempt")
    draft.delete()


def remove_unrecorded_package(package_dir: Path) -> bool:
    """Delete a package directory no Environment row points to (a publish cut short)."""
    recorded = Environment.objects.filter(
        package_path__in={str(package_dir), str(package_dir.resolve())}
    ).exists()
    if recorded or not package_dir.exists():
        return False
    shutil.rmtree(package_dir)
    return True


def resolve_theme(ctx: JobContext, request: BuildRequest) -> tuple[Theme, BuildRequest]:
    """The Theme row a theme or MCP build reads; an MCP server is imported and stored first
    (once: a retry reuses the stored theme). The request gets the theme's category."""
    from dataclasses import replace

    from environments.builder.theme_pipeline import category_of
    from environments.mcp_import import MCPImportError, import_mcp_server
    from environments.themes_import import store_theme

    theme_id = request.theme or ctx.saved.get("theme")
    if theme_id:
        row = Theme.objects.filter(pk=theme_id).select_related("category").first()
        if row is None:
            raise ValueError(f"theme {theme_id} does not exist")
    else:
        ctx.progress(0.01, f"importing the MCP server {request.mcp[:100]}")
        try:
            imported = import_mcp_server(mcp_target(request.mcp))
        except MCPImportError as exc:
            raise ValueError(f"ingest stage failed: {exc}") from exc
        row = store_theme(imported, created_by=ctx.job.created_by)
        ctx.checkpoint(theme=row.pk)
        ctx.log(
            f"imported theme {row.name} (#{row.pk}): {len(imported['raw_spec']['tools'])} tools"
        )
    category = category_of(request, row.category.path if row.category else "")
    return row, replace(
        request,
        category=category,
        title=request.title or (row.title or row.name)[:200],
        description=request.description or row.description[:2000],
    )


def draft_environment(
    spec: dict[str, Any],
    parent: Environment | None = None,
    created_by: Any = None,
    theme: Theme | None = None,
) -> Environment:
    """The row that shows a build in progress, and why it failed if it does."""
    from environments.registry import category_for

    if theme is not None:
        return Environment.objects.create(
            name=spec["name"],
            version=next_version(spec["name"]),
            title=spec["title"],
            description=spec["description"] or theme.description[:2000],
            theme=theme,
            category=category_for(spec),
            parent=parent,
            created_by=created_by,
        )
    theme, _ = Theme.objects.get_or_create(
        name=spec["name"],
        source_kind=Theme.SourceKind.MANUAL,
        defaults={
            "title": spec["title"],
            "description": spec["description"],
            "raw_spec": spec,
            "category": category_for(spec),
        },
    )
    return Environment.objects.create(
        name=spec["name"],
        version=next_version(spec["name"]),
        title=spec["title"],
        description=spec["description"],
        theme=theme,
        category=category_for(spec),
        parent=parent,
        created_by=created_by,
    )


def next_version(name: str) -> int:
    """Past every version in the database and on disk, so neither is ever overwritten."""
    latest = (
        Environment.objects.filter(name=name)
        .order_by("-version")
        .values_list("version", flat=True)
        .first()
    )
    on_disk = next_version_on_disk(packages_root(), name) - 1
    return max(latest or 0, on_disk) + 1


@transaction.atomic
def adopt_draft(
    draft: Environment,
    package_path: str,
    report: dict[str, Any],
    build_yield: dict[str, Any] | None = None,
) -> Environment:
    """Replace the in-progress row by the recorded package (same name, the package's version)."""
    theme, parent, created_by = draft.theme, draft.parent, draft.created_by
    Environment.objects.filter(pk=draft.pk).delete()
    recorded = record_package(package_path, verification=report, theme=theme, parent=parent)
    Environment.objects.filter(pk=recorded.pk).update(
        **yield_fields(build_yield or {}), created_by=created_by
    )
    recorded.build_yield, recorded.created_by = build_yield or {}, created_by
    recorded.origin = yield_fields(recorded.build_yield)["origin"]
    return recorded


@job("environments.complexify", queue=Job.Queue.SANDBOX)
def complexify_environment(
    ctx: JobContext,
    environment: int,
    rounds: int = 1,
    rows_per_table: int = 5,
    seed: int = 0,
    tables: list[str] | None = None,
) -> dict[str, Any]:
    """A new version whose database has more rows, edge cases and links; tools re-verified.
    ``tables``: only these tables grow (None: all). The result says what was added where; the
    new version records its build yield like every build."""
    from environments.builder.complexify import GrowthPlan, ParentPackage, run_complexify
    from environments.builder.request import EnvironmentSpec

    base = Environment.objects.get(pk=environment)
    orphan = ctx.saved.get("publishing")
    if orphan and remove_unrecorded_package(Path(orphan)):
        ctx.log(f"removed {orphan}, published but never recorded by an earlier attempt")
    spec = EnvironmentSpec(
        name=base.name,
        title=base.title,
        description=base.description,
        category=published_category(base.manifest.get("category")),
        version=next_version(base.name),
    )
    ctx.checkpoint(publishing=str(packages_root() / base.name / f"v{spec.version}"))
    parent = ParentPackage(
        base.label, Path(base.package_path) / "state.sqlite", list(base.provenance)
    )
    plan = GrowthPlan(
        rounds, rows_per_table, seed, frozenset(tables) if tables is not None else None
    )
    workdir = Path(tempfile.mkdtemp(prefix=f"aw-complexify-{base.name}-"))
    try:
        outcome, growth = run_complexify(
            spec,
            parent,
            plan,
            root=packages_root(),
            workdir=workdir,
            llm=llm_settings(),
            progress=ctx.progress,
            on_stage=lambda stage, build_yield: ctx.log(
                f"{stage}: {_yield_line(build_yield[stage])}"
            ),
        )
    except BuildFailed as exc:
        if exc.__cause__ is not None and interrupted(exc.__cause__):
            raise exc.__cause__ from None  # the retry grows the version again
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    history = [record.__dict__ for record in growth.records]
    with transaction.atomic():
        recorded = record_package(
            outcome.path, verification=outcome.report, theme=base.theme, parent=base
        )
        Environment.objects.filter(pk=recorded.pk).update(
            **yield_fields(outcome.build_yield),
            provenance=recorded.provenance
            + [
                {
                    "table": "*",
                    "source": base.label,
                    "kind": "complexified",
                    "detail": str(history)[:2000],
                }
            ],
        )
    return {
        "environment": recorded.pk,
        "parent": base.pk,
        "version": recorded.version,
        "rounds": len(growth.records),
        "rows_added": growth.rows_added,
        "edge_cases": growth.edge_cases,
    }


def published_category(category: dict[str, str] | None) -> CategoryPath | None:
    """A published package's category as it stands (it was checked when it was built)."""
    if not category or not category.get("primary"):
        return None
    return CategoryPath(
        category["primary"], category.get("secondary", ""), category.get("tertiary", "")
    )


@job("environments.import_themes")
def import_themes(
    ctx: JobContext,
    source_kind: str = "auto",
    documents: list[Any] | None = None,
    mcp_command: str | None = None,
    mcp_url: str | None = None,
) -> dict[str, Any]:
    """Parse, classify and deduplicate themes; bad items are reported, good ones kept."""
    from environments.themes_import import store_themes

    return store_themes(ctx, source_kind, documents or [], mcp_command, mcp_url)


@job("environments.build_directory")
def build_directory(ctx: JobContext, run: int) -> dict[str, Any]:
    """A catalogue run over a directory of documents: list the run's selection and queue one
    `environments.build_directory_item` per document not yet built (environments/directory/).
    A retry after a lost worker lists again and queues only what has no live job."""
    from environments.directory.launch import fan_out

    return fan_out(ctx, run)


def _give_up_item(arguments: dict[str, Any], reason: str) -> None:
    """A document's job gave up: its item says so and the next waiting document goes on."""
    from environments.directory.launch import top_up_run
    from environments.directory.ledger import give_up
    from environments.models import CatalogueItem

    item = CatalogueItem.objects.filter(pk=int(arguments["item"])).first()
    if item is not None:
        give_up(item.pk, reason)
        top_up_run(item.run_id)


@job("environments.build_directory_item", queue=Job.Queue.SANDBOX, on_give_up=_give_up_item)
def build_directory_item(ctx: JobContext, item: int) -> dict[str, Any]:
    """Build one directory document, or one part of a split one, and record the outcome on its
    ledger item (a split document's job stores its parts' themes and queues them instead)."""
    from environments.directory.build import build_document

    return build_document(ctx, item)
