"""Console: catalogue runs over an API directory and the progress of one (the ledger's view:
built, rejected by reason, remaining, one row per document). Logic: environments/directory/."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404, render

from aw_site.console import JOB_POLL, console_page, page_of
from environments.directory.ledger import run_summary
from environments.models import CatalogueItem, CatalogueRun

RUNS_PER_PAGE = 25
ITEMS_PER_PAGE = 50


@console_page
def run_list(request):
    page = page_of(request, CatalogueRun.objects.select_related("job"), RUNS_PER_PAGE)
    runs = [(run, run_summary(run)) for run in page.object_list]
    return render(request, "environments/catalogue_runs.html", {"page": page, "runs": runs})


def _run_context(request, pk: int) -> dict[str, Any]:
    run = get_object_or_404(CatalogueRun.objects.select_related("job"), pk=pk)
    items = run.items.all()
    state = request.GET.get("state", "")
    if state in CatalogueItem.State.values:
        items = items.filter(state=state)
    return {
        "run": run,
        "summary": run_summary(run),
        "page": page_of(request, items, ITEMS_PER_PAGE),
        "state": state,
        "states": CatalogueItem.State.values,
        "job_poll": JOB_POLL.replace("1s", "3s"),
    }


@console_page
def run_detail(request, pk: int):
    return render(request, "environments/catalogue_run.html", _run_context(request, pk))


@console_page
def run_progress(request, pk: int):
    """HTMX fragment polled while documents remain; it stops polling once none does."""
    return render(request, "environments/_catalogue_run_progress.html", _run_context(request, pk))
