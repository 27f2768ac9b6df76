"""Rollouts: a policy acting in isolated episodes, every step recorded as a trajectory."""

from training.rollout.agent_loop import (
    DEFAULT_STEP_BUDGET,
    RolloutSettings,
    rollout_many,
    rollout_many_async,
    run_episode,
    run_episode_async,
)
from training.rollout.gold_chain import GoldChainPolicy
from training.rollout.trajectory import Step, Trajectory

__all__ = [
    "DEFAULT_STEP_BUDGET",
    "GoldChainPolicy",
    "RolloutSettings",
    "Step",
    "Trajectory",
    "rollout_many",
    "rollout_many_async",
    "run_episode",
    "run_episode_async",
]
