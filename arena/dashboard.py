"""Console: the home dashboard, an overview of every app (environments, trajectories, rounds,
training runs, running jobs). It lives in arena, the top layer, because it reads them all."""

from __future__ import annotations

from django.db.models import Count
from django.shortcuts import render

from arena.models import EvolutionRound
from arena.review_queue import rounds_awaiting_review
from aw_site.console import JOB_POLL, console_page
from aw_site.models import Job
from environments.models import Environment
from training.models import TrainingRun, Trajectory


@console_page
def home(request):
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
        "review_waiting": rounds_awaiting_review(),  # the banner asks reviewers to decide
    }
    return render(request, "aw_site/home.html", context)


def _status_counts(model) -> dict[str, int]:
    return {
        row["status"]: row["n"] for row in model.objects.values("status").annotate(n=Count("id"))
    }
