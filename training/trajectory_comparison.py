"""A stored trajectory set against its task's gold run, for the API and the replay page.

The comparison itself is ``tasks.step_comparison``; this module feeds it the stored steps and
applies the privacy rule: on evaluation tasks a viewer gets the verdicts, never gold values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tasks.privacy import hides_answers
from tasks.step_comparison import StepComparison, compare_steps, comparison_payload
from training.models import Step, Trajectory


def stored_comparison(
    trajectory: Trajectory, steps: Iterable[Step] | None = None
) -> list[StepComparison]:
    """Each gold step of the trajectory's task with the agent step that answers it."""
    steps = trajectory.steps.order_by("index") if steps is None else steps
    chain = trajectory.task.gold_chain if isinstance(trajectory.task.gold_chain, list) else []
    return compare_steps(chain, [step.to_record() for step in steps])


def comparison_for(
    user: Any, trajectory: Trajectory, steps: Iterable[Step] | None = None
) -> dict[str, Any]:
    """The payload a user may see: full for reviewers and non-evaluation tasks, verdicts only
    (no gold tool, arguments or results) for viewers of evaluation tasks."""
    split = getattr(trajectory, "task_split", None) or trajectory.task.split
    return comparison_payload(stored_comparison(trajectory, steps), hides_answers(user, split))
