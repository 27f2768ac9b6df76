"""Console: catalogue runs over an API directory and the progress of one (the ledger's view:
built, rejected by reason, remaining, one row per document). Logic: environments/directory/."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404, redirect, render

from aw_site.console import JOB_POLL, console_action, console_page, page_of
from environments.directory.launch import start_npm_run
from environments.directory.ledger import run_summary
from environments.directory.listing import PACKAGE, PACKAGE_VERSION
from environments.directory.run_request import FIELDS, RunRequestError, read_run_request
from environments.models import CatalogueItem, CatalogueRun

RUNS_PER_PAGE = 25
ITEMS_PER_PAGE = 50


def _list_context(request, values: dict[str, str] | None = None, errors=None) -> dict[str, Any]:
    page = page_of(request, CatalogueRun.objects.select_related("job"), RUNS_PER_PAGE)
    return {
        "page": page,
        "runs": [(run, run_summary(run)) for run in page.object_list],
        "values": values or {"seed": "0", "tasks": "5"},
        "errors": errors or {},
        "package": f"{PACKAGE}@{PACKAGE_VERSION}",
    }


@console_page
def run_list(request):
    return render(request, "environments/catalogue_runs.html", _list_context(request))


@console_action()
def run_start(request):
    """The form on the runs page: start a run over the npm package (its job installs it), then
    show the run; a wrong field is named on the form again (400)."""
    values = {field: request.POST.get(field, "").strip() for field in FIELDS}
    try:
        run = start_npm_run(read_run_request(values), request.user)
    except RunRequestError as exc:
        context = _list_context(request, values, exc.errors)
        return render(request, "environments/catalogue_runs.html", context, status=400)
    return redirect("catalogue-run", pk=run.pk)


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
