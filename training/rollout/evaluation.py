"""Roll a policy out on tasks and score every trajectory with the one reward function."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from tasks.trajectory import Trajectory
from training.policies.base import Policy
from training.rollout.agent_loop import RolloutSettings, rollout_many


def score_trajectories(tasks: Sequence[Any], trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Attach each reward breakdown to its trajectory; return the summary figures."""
    from tasks.reward import score

    totals, successes = [], []
    for task, trajectory in zip(tasks, trajectories, strict=True):
        breakdown = score(task, trajectory)
        trajectory.reward = breakdown
        totals.append(breakdown.total)
        successes.append(breakdown.success)
    count = len(totals)
    return {
        "episodes": count,
        "reward_mean": round(sum(totals) / count, 4) if count else 0.0,
        "success_rate": round(sum(successes) / count, 4) if count else 0.0,
        "finished": dict(Counter(t.finished_reason for t in trajectories)),
        "format_errors": sum(
            1 for t in trajectories for s in t.steps if s.error_kind == "format_error"
        ),
        "tool_calls": sum(1 for t in trajectories for s in t.steps if s.tool_call),
    }


def evaluate_policy(
    policy: Policy,
    tasks: Sequence[Any],
    packages: Any,
    pool: Any = None,
    concurrency: int = 4,
    settings: RolloutSettings | None = None,
) -> tuple[dict[str, Any], list[Trajectory]]:
    """(summary, trajectories) of one rollout per task."""
    trajectories = rollout_many(policy, tasks, packages, concurrency, pool, settings)
    return score_trajectories(tasks, trajectories), trajectories
