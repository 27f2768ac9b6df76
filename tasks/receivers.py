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
