"""What the tasks app does when environments announce something (environments/signals.py)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

SYNTHESIZE_JOB = "tasks.synthesize"


def queue_goal_tasks(sender: Any, environment: Any, options: Any, **kwargs: Any) -> int | None:
    """A published environment whose build asked for tasks (options.tasks) gets one goal-tier
    synthesis job, once: a build retried after a lost worker announces again, and queues
    nothing more. Returns the job's id, or None."""
    from aw_site.jobs import enqueue
    from aw_site.models import Job

    count = int(getattr(options, "tasks", 0) or 0)
    if count <= 0:
        return None
    target = f"environment:{environment.pk}"
    with transaction.atomic():
        if Job.objects.filter(kind=SYNTHESIZE_JOB, target=target).exists():
            return None
        job = enqueue(
            SYNTHESIZE_JOB,
            {"environment": environment.pk, "tier": "goal", "count": count},
            user=environment.created_by,
            target=target,
        )
    return job.pk


def import_released_questions(
    sender: Any, environment: Any, options: Any, **kwargs: Any
) -> dict[str, Any] | None:
    """An environment imported from an Agent-World release gets the release's questions as
    held-out tasks, those whose chains reproduce their reference answers (released_questions);
    what was imported and kept out, by reason, is kept on its build yield (`questions`)."""
    from environments.models import Environment
    from tasks.released_questions import import_released_questions as run_import

    if not (environment.manifest or {}).get("release"):
        return None
    outcome = run_import(environment).as_dict()
    build_yield = dict(environment.build_yield or {}, questions=outcome)
    Environment.objects.filter(pk=environment.pk).update(build_yield=build_yield)
    environment.build_yield = build_yield
    return outcome
