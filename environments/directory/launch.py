"""Starting a catalogue run and fanning it out: one build job per pending document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction

from aw_site.jobs import JobContext, enqueue
from aw_site.models import Job
from environments.directory import ledger
from environments.directory.listing import (
    DirectoryError,
    Selection,
    api_folder,
    document_paths,
    list_documents,
)
from environments.models import CatalogueItem, CatalogueRun

RUN_JOB = "environments.build_directory"
ITEM_JOB = "environments.build_directory_item"


def start_run(
    directory: Path, selection: Selection, tasks: int = 5, user: Any = None
) -> CatalogueRun:
    """Record a run over `directory` (the package folder or its api/ folder) and queue its
    fan-out job; refuses a folder without documents before anything is queued."""
    api = api_folder(directory)
    if not document_paths(api):
        raise DirectoryError(f"{api} holds no JSON documents")
    if not 0 <= tasks <= 200:
        raise DirectoryError("tasks per environment must be between 0 and 200")
    with transaction.atomic():
        run = CatalogueRun.objects.create(
            source=str(api.resolve()),
            selection=selection.as_dict(),
            tasks_per_environment=tasks,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        run.job = enqueue(RUN_JOB, {"run": run.pk}, user=user, target=f"catalogue-run:{run.pk}")
        run.save(update_fields=["job"])
    return run


def fan_out(ctx: JobContext, run_id: int) -> dict[str, Any]:
    run = CatalogueRun.objects.get(pk=run_id)
    selection = Selection(**run.selection)
    ctx.progress(0.05, f"listing {run.source}")
    documents = list_documents(Path(run.source), selection)
    CatalogueRun.objects.filter(pk=run.pk).update(listed=len(documents))
    ctx.progress(0.3, f"{len(documents)} documents selected")

    def queue_item(item: CatalogueItem) -> Job:
        return enqueue(
            ITEM_JOB, {"item": item.pk}, user=run.created_by, target=f"directory:{item.key}"[:200]
        )

    result = ledger.queue_pending(run, documents, queue_item)
    CatalogueRun.objects.filter(pk=run.pk).update(done_before=result.done_before)
    ctx.progress(
        1.0,
        f"queued {len(result.queued)} document builds; {result.done_before} built by an earlier "
        f"run, {result.in_progress} still building in another",
    )
    return {
        "run": run.pk,
        "listed": len(documents),
        "queued": len(result.queued),
        "done_before": result.done_before,
        "in_progress": result.in_progress,
    }
