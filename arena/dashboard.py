"""Console: the home dashboard, an overview of every app (environments, trajectories, rounds,
training runs, running jobs) and of ``./dev run``'s main loop. It lives in arena, the top layer,
because it reads them all."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from arena.main_loop import latest_loop, loop_view
from arena.models import EvolutionRound
from arena.review_queue import rounds_awaiting_review
from aw_site.console import JOB_POLL, console_page
from aw_site.models import Job
from environments.models import Environment
from training.models import TrainingRun, Trajectory

LIVE_POLL = "every 2s"  # the dashboard's live part refreshes while anything runs
GUIDE_COOKIE = "aw_guide_dismissed_{user}"  # one per user, so a shared browser asks each once
GUIDE_COOKIE_SECONDS = 5 * 365 * 24 * 3600


@console_page
def home(request):
    context = _live_context()
    context["show_guide"] = not guide_dismissed(request)
    return render(request, "aw_site/home.html", context)


@console_page
def home_live(request):
    """The part of the dashboard that fills in as the loop runs (polled by HTMX)."""
    return render(request, "aw_site/_overview_live.html", _live_context())


@login_required
@require_POST
def dismiss_guide(request):
    """Hide the first-visit guide for this user in this browser (a cookie, no model field)."""
    response = redirect("home")
    if request.user.is_authenticated:
        response.set_cookie(
            GUIDE_COOKIE.format(user=request.user.pk),
            "1",
            max_age=GUIDE_COOKIE_SECONDS,
            samesite="Lax",
            httponly=True,
        )
    return response


def guide_dismissed(request) -> bool:
    return request.COOKIES.get(GUIDE_COOKIE.format(user=request.user.pk)) == "1"


def _live_context() -> dict:
    counts = _status_counts(Environment)
    running_jobs = list(Job.objects.exclude(state__in=Job.FINISHED_STATES)[:10])
    loop = loop_view(latest_loop())
    return {
        "environment_counts": counts,
        "environments_in_progress": sum(counts.get(s, 0) for s in ("draft", "mining", "verifying")),
        "trajectory_total": Trajectory.objects.count(),
        "trajectory_failed": Trajectory.objects.filter(success=False).count(),
        "rounds": EvolutionRound.objects.select_related("policy", "current_job")[:5],
        "training_runs": TrainingRun.objects.select_related("base_policy")[:5],
        "running_jobs": running_jobs,
        "loop": loop,
        "live": bool(running_jobs) or (loop is not None and not loop.job.is_finished),
        "live_poll": LIVE_POLL,
        "job_poll": JOB_POLL,
        "review_waiting": rounds_awaiting_review(),  # the banner asks reviewers to decide
    }


def _status_counts(model) -> dict[str, int]:
    return {
        row["status"]: row["n"] for row in model.objects.values("status").annotate(n=Count("id"))
    }
