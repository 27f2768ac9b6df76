"""Celery jobs of task synthesis."""

from __future__ import annotations

from typing import Any

from aw_site.jobs import JobContext, job
from aw_site.models import Job
from environments.models import Environment
from tasks.service import SynthesisAccount, synthesize_tasks


@job("tasks.synthesize", queue=Job.Queue.SANDBOX)
def synthesize(
    ctx: JobContext,
    environment: int,
    kind: str = "graph",
    count: int = 20,
    min_walk_length: int = 1,
    max_walk_length: int = 4,
    write_steps: int = 0,
    seed: int = 0,
    split: str | None = None,
    tier: str = "goal",
    consistency: dict[str, Any] | bool | None = None,
) -> dict[str, Any]:
    """Synthesize verified tasks in one environment; rerunning adds only new signatures.

    ``consistency`` ({"policy": id, "rollouts": N}): each task's pass rate over N rollouts,
    and the tasks every rollout or none solved marked (Task.consistency)."""
    record = Environment.objects.get(pk=environment)
    if record.status != Environment.Status.VERIFIED:
        raise ValueError(
            f"{record} is {record.status}; tasks are synthesized in verified environments only"
        )
    account = SynthesisAccount()
    created = synthesize_tasks(
        record,
        kind=kind,
        count=count,
        min_walk_length=min_walk_length,
        max_walk_length=max_walk_length,
        write_steps=write_steps,
        seed=seed,
        split=split,
        tier=tier,
        consistency=consistency,
        progress=ctx.progress,
        account=account,
    )
    by_split: dict[str, int] = {}
    by_consistency: dict[str, int] = {}
    for task in created:
        by_split[task.split] = by_split.get(task.split, 0) + 1
        if task.consistency:
            by_consistency[task.consistency] = by_consistency.get(task.consistency, 0) + 1
    dropped = sum(account.discarded.values()) + sum(account.audit.discarded.values())
    ctx.progress(1.0, f"stored {len(created)} new tasks in {record.label}; {dropped} discarded")
    # what the audit kept and discarded by check, and every other discard by reason
    result: dict[str, Any] = {"created": len(created), "by_split": by_split, **account.to_dict()}
    if by_consistency:
        result["by_consistency"] = by_consistency
    return result
