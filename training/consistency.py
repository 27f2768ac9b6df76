"""Pass rates of synthesized tasks under a policy: the solver behind the consistency filter.

``tasks.service.measure_consistency`` asks for a ``BatchSolver``; this module builds it from a
Policy row (any kind: an OpenAI-compatible endpoint, a local model, the gold-chain replay) or
from the AW_POLICY_BASE_URL endpoint, and registers the factory when the training app loads.
One call of the solver is one rollout of every task, run concurrently and judged by the
shared reward (solved = answer and final state right; a programmatic task by its verification
script).
"""

from __future__ import annotations

import os
from typing import Any

from tasks.synthesis.task_spec import TaskSpec

SAMPLING_TEMPERATURE = 1.0  # rollouts of one policy must be able to differ


def policy_batch_solver(policy_id: int | None, package: Any, pool: Any):
    """A ``BatchSolver`` rolling out policy ``policy_id`` (None: the AW_POLICY_BASE_URL
    endpoint) on ``package`` in ``pool``."""
    from training.models import Policy
    from training.policies import OpenAICompatiblePolicy
    from training.rollout import RolloutSettings, rollout_many
    from training.rollout.evaluation import score_trajectories
    from training.service import policy_client

    policy = Policy.objects.get(pk=policy_id) if policy_id is not None else None

    def client_for(specs: list[TaskSpec]):
        if policy is None:
            return OpenAICompatiblePolicy.from_env(temperature=SAMPLING_TEMPERATURE)
        if policy.kind == Policy.Kind.OPENAI:
            return OpenAICompatiblePolicy(
                base_url=policy.base_url,
                model=policy.model_name or "default",
                api_key=os.environ.get("AW_POLICY_API_KEY", "") or "not-needed",
                temperature=SAMPLING_TEMPERATURE,
            )
        return policy_client(policy, specs)

    def solve(specs: list[TaskSpec]) -> list[bool]:
        trajectories = rollout_many(
            client_for(specs),
            specs,
            package,
            concurrency=8,
            pool=pool,
            settings=RolloutSettings(
                step_budget=max(40, 2 * max(len(s.gold_chain) for s in specs))
            ),
        )
        score_trajectories(specs, trajectories)
        return [t.reward is not None and t.reward.success for t in trajectories]

    return solve
