"""Celery jobs of environment discovery: each wraps a stage in environments.discovery."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from aw_site.jobs import JobContext, enqueue, interrupted, job
from aw_site.llm import llm_settings
from aw_site.models import Job
from environments.discovery import catalogue
from environments.models import Environment, Theme
from environments.registry import record_package


def packages_root() -> Path:
    root = Path(settings.STORAGE_ROOT) / "environments"
    root.mkdir(parents=True, exist_ok=True)
    return root


def starter_spec(name: str) -> dict[str, Any]:
    for spec in catalogue.STARTER_SPECS:
        if spec["name"] == name:
            return spec
    known = ", ".join(s["name"] for s in catalogue.STARTER_SPECS)
    raise ValueError(f"unknown source {name!r}; known sources: {known}")


def stage(ctx: JobContext, start: float, end: float):
    """A progress callback mapping a stage's 0..1 onto the job's [start, end]."""
    return lambda fraction, message="": ctx.progress(start + (end - start) * fraction, message)


@job("environments.build_catalogue")
def build_catalogue(
    ctx: JobContext, sources: list[str] | None = None, workers: int = 2
) -> dict[str, Any]:
    """Fan out one build job per source to the sandbox queue, so workers build in parallel."""
    names = sources or [spec["name"] for spec in catalogue.STARTER_SPECS]
    for name in names:
        starter_spec(name)  # refuse unknown names before anything is enqueued
    children = []
    with transaction.atomic():
        for name in names:
            child = enqueue(
                "environments.build_environment",
                {"source": name},
                user=ctx.job.created_by,
                target=f"source:{name}",
            )
            children.append(child.pk)
    ctx.progress(1.0, f"enqueued {len(children)} environment builds")
    return {"jobs": children}


@job("environments.build_environment", queue=Job.Queue.SANDBOX)
def build_environment(ctx: JobContext, source: str) -> dict[str, Any]:
    """Mine, design tools, verify in the sandbox and publish one environment version."""
    spec = starter_spec(source)
    discard_interrupted_draft(ctx)
    environment = draft_environment(spec)
    ctx.checkpoint(draft_environment=environment.pk)
    workdir = Path(tempfile.mkdtemp(prefix=f"aw-mine-{source}-"))
    try:
        environment.transition(Environment.Status.MINING)
        mined = catalogue.mine_environment(spec, workdir, stage(ctx, 0.0, 0.25))
        designed = catalogue.design_tools(
            mined["db_path"],
            spec["title"],
            llm_settings(),
            {"title": spec["title"], "description": spec["description"]},
            stage(ctx, 0.25, 0.4),
        )
        environment.transition(Environment.Status.VERIFYING)
        checked = catalogue.verify_environment(
            spec["name"],
            mined["db_path"],
            designed["schema_tools"],
            designed["llm_tools"],
            spec["category"],
            progress=stage(ctx, 0.4, 0.9),
        )
        ctx.log(checked["explanation"][:2000])
        if not checked["report"]["verified"]:
            environment.verification_report = checked["report"]
            environment.transition(
                Environment.Status.REJECTED, reason=checked["explanation"][:5000]
            )
            return {"environment": environment.pk, "verified": False}
        versioned = {**spec, "version": environment.version}
        path = catalogue.publish(
            packages_root(),
            versioned,
            mined["db_path"],
            checked["tools"],
            checked["report"],
            stage(ctx, 0.9, 0.97),
        )
        recorded = adopt_draft(environment, path, checked["report"])
        ctx.progress(1.0, f"published {recorded.label} with {recorded.tool_count} verified tools")
        return {
            "environment": recorded.pk,
            "verified": True,
            "tools": recorded.tool_count,
            "path": path,
        }
    except Exception as exc:
        if interrupted(exc):
            raise  # the retry discards this draft and builds the version again
        environment.refresh_from_db()
        if environment.status in (
            Environment.Status.MINING,
            Environment.Status.VERIFYING,
            Environment.Status.DRAFT,
        ):
            environment.transition(
                Environment.Status.REJECTED, reason=f"{type(exc).__name__}: {exc}"
            )
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


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


def draft_environment(spec: dict[str, Any], parent: Environment | None = None) -> Environment:
    """The row that shows a build in progress, and why it failed if it does."""
    from environments.registry import category_for

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
    )


def next_version(name: str) -> int:
    """Past every version in the database and on disk, so neither is ever overwritten."""
    latest = (
        Environment.objects.filter(name=name)
        .order_by("-version")
        .values_list("version", flat=True)
        .first()
    )
    on_disk = catalogue.next_version_on_disk(packages_root(), name) - 1
    return max(latest or 0, on_disk) + 1


@transaction.atomic
def adopt_draft(draft: Environment, package_path: str, report: dict[str, Any]) -> Environment:
    """Replace the in-progress row by the recorded package (same name, the package's version)."""
    theme, parent = draft.theme, draft.parent
    Environment.objects.filter(pk=draft.pk).delete()
    return record_package(package_path, verification=report, theme=theme, parent=parent)


@job("environments.complexify", queue=Job.Queue.SANDBOX)
def complexify_environment(
    ctx: JobContext, environment: int, rounds: int = 1, rows_per_table: int = 5, seed: int = 0
) -> dict[str, Any]:
    """A new version whose database has more rows, edge cases and links; tools re-verified."""
    from environments.discovery.complexify import complexify
    from environments.discovery.sources.base import restore_provenance

    base = Environment.objects.get(pk=environment)
    interrupted = ctx.saved.get("publishing")
    if interrupted and remove_unrecorded_package(Path(interrupted)):
        ctx.log(f"removed {interrupted}, published but never recorded by an earlier attempt")
    spec = {
        "name": base.name,
        "title": base.title,
        "description": base.description,
        "category": base.manifest.get("category", {}),
    }
    workdir = Path(tempfile.mkdtemp(prefix=f"aw-complexify-{base.name}-"))
    try:
        db_path = workdir / "state.sqlite"
        shutil.copyfile(Path(base.package_path) / "state.sqlite", db_path)
        restore_provenance(db_path, base.provenance)
        records = complexify(db_path, rounds=rounds, rows_per_table=rows_per_table, seed=seed)
        ctx.progress(0.3, f"complexified in {len(records)} round(s)")
        designed = catalogue.design_tools(
            db_path, base.title, llm_settings(), None, stage(ctx, 0.3, 0.4)
        )
        checked = catalogue.verify_environment(
            base.name,
            db_path,
            designed["schema_tools"],
            designed["llm_tools"],
            spec["category"],
            progress=stage(ctx, 0.4, 0.9),
        )
        if not checked["report"]["verified"]:
            raise ValueError(
                f"complexified {base.label} did not verify: {checked['explanation'][:500]}"
            )
        spec["version"] = next_version(base.name)
        ctx.checkpoint(publishing=str(packages_root() / base.name / f"v{spec['version']}"))
        path = catalogue.publish(
            packages_root(), spec, db_path, checked["tools"], checked["report"]
        )
        history = [record.__dict__ if hasattr(record, "__dict__") else record for record in records]
        with transaction.atomic():
            recorded = record_package(
                path, verification=checked["report"], theme=base.theme, parent=base
            )
            Environment.objects.filter(pk=recorded.pk).update(
                provenance=recorded.provenance
                + [
                    {
                        "table": "*",
                        "source": base.label,
                        "kind": "complexified",
                        "detail": str(history)[:2000],
                    }
                ]
            )
        return {"environment": recorded.pk, "parent": base.pk, "rounds": len(records)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


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
