"""Console: the live job pages (the guards are in aw_site/console.py; the home dashboard, which
reads every app, is arena/dashboard.py)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404, render

from aw_site.console import JOB_POLL, console_page, page_of
from aw_site.models import Job


@console_page
def job_list(request):
    jobs = Job.objects.select_related("created_by")
    state = request.GET.get("state", "")
    if state == "active":
        jobs = jobs.exclude(state__in=Job.FINISHED_STATES)
    elif state in Job.State.values:
        jobs = jobs.filter(state=state)
    kind = request.GET.get("kind", "").strip()
    if kind:
        jobs = jobs.filter(kind=kind)
    context = {
        "page": page_of(request, jobs, 30),
        "state": state,
        "kind": kind,
        "states": Job.State.values,
        "kinds": Job.objects.order_by("kind").values_list("kind", flat=True).distinct(),
        "active_count": Job.objects.exclude(state__in=Job.FINISHED_STATES).count(),
        "job_poll": JOB_POLL,
    }
    return render(request, "aw_site/job_list.html", context)


@console_page
def job_detail(request, pk: int):
    job = get_object_or_404(Job.objects.select_related("created_by"), pk=pk)
    return render(request, "aw_site/job_detail.html", {"job": job, "job_poll": JOB_POLL})


@console_page
def job_progress(request, pk: int):
    """HTMX fragment polled while a job runs; once finished it renders without a trigger."""
    job = get_object_or_404(Job, pk=pk)
    return render(
        request,
        "aw_site/_job_progress.html",
        {"job": job, "job_poll": JOB_POLL, "show_log": request.GET.get("log") != "0"},
    )
