"""Console: the guards every page uses, the home overview and the live job pages.

Reading any console page needs a signed-in user with at least the viewer role; actions that
change something (approve, start a round) are POST-only and need the reviewer role, so a forged
POST from a viewer is refused with 403 whatever the page showed.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from aw_site.models import Job
from aw_site.roles import REVIEWER, VIEWER, role_required

JOB_POLL = "every 1s"


def console_page(view: Callable) -> Callable:
    """A read-only console page: signed in, viewer role or above, GET only."""
    return login_required(role_required(VIEWER)(require_GET(view)))


def console_action(needed: str = REVIEWER) -> Callable:
    """A state-changing console action: signed in, POST only, the given role or above."""

    def decorate(view: Callable) -> Callable:
        return login_required(require_POST(role_required(needed)(view)))

    return decorate


def page_of(request, items, per_page: int):
    """The requested page of a queryset or list (out-of-range pages give the last page)."""
    return Paginator(items, per_page).get_page(request.GET.get("page"))


@console_page
def home(request):
    from arena.models import EvolutionRound
    from environments.models import Environment
    from training.models import TrainingRun, Trajectory

    counts = _status_counts(Environment)
    context = {
        "environment_counts": counts,
        "environments_in_progress": sum(counts.get(s, 0) for s in ("draft", "mining", "verifying")),
        "trajectory_total": Trajectory.objects.count(),
        "trajectory_failed": Trajectory.objects.filter(success=False).count(),
        "rounds": EvolutionRound.objects.select_related("policy", "current_job")[:5],
        "training_runs": TrainingRun.objects.select_related("base_policy")[:5],
        "running_jobs": Job.objects.exclude(state__in=Job.FINISHED_STATES)[:10],
        "job_poll": JOB_POLL,
    }
    return render(request, "aw_site/home.html", context)


def _status_counts(model) -> dict[str, int]:
    from django.db.models import Count

    return {
        row["status"]: row["n"] for row in model.objects.values("status").annotate(n=Count("id"))
    }


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
