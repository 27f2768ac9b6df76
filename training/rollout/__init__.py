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

__all__ = [
    "DEFAULT_STEP_BUDGET",
    "GoldChainPolicy",
    "RolloutSettings",
    "rollout_many",
    "rollout_many_async",
    "run_episode",
    "run_episode_async",
]
