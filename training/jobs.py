"""Celery jobs of training: a TrainingRun on the gpu queue."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from aw_site.jobs import JobContext, interrupted, job
from aw_site.models import Job
from training.models import TrainingRun
from training.service import fail_unfinished_run, train


def _run_given_up(arguments: dict[str, Any], reason: str) -> None:
    """The run's worker died on its last attempt: the run is failed, not left running."""
    fail_unfinished_run(arguments.get("run"), reason)


@job("training.train", queue=Job.Queue.GPU, on_give_up=_run_given_up)
def train_job(ctx: JobContext, run: int) -> dict[str, Any]:
    record = TrainingRun.objects.select_related("base_policy").get(pk=run)
    if record.status == TrainingRun.Status.SUCCEEDED:
        return {"skipped": f"training run {run} already succeeded"}
    try:
        train(record, ctx.progress)
    except Exception as exc:
        if interrupted(exc):
            raise  # the retry trains this run again
        TrainingRun.objects.filter(pk=run).update(
            status=TrainingRun.Status.FAILED,
            failure_reason=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        raise
    record.refresh_from_db()
    return {"output_policy": record.output_policy_id, "summary": record.summary}
