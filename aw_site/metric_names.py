"""Plain names for the training metrics the trainers log, in one place.

The trainers log TRL's keys (``frac_reward_zero_std``, ``tools/call_frequency``); a person reads
"groups with no reward spread (share)". Charts and pages ask ``plain_metric_name``; a key not
listed here is shown with its separators turned into spaces.
"""

from __future__ import annotations

METRIC_NAMES = {
    "reward_mean": "mean reward",
    "success_rate": "success rate (share of tasks solved)",
    "kl": "KL divergence from the base policy",
    "loss": "loss",
    "frac_reward_zero_std": "groups with no reward spread (share)",
    "tools/call_frequency": "tool calls per rollout",
    "tools/failure_frequency": "failed tool calls (share)",
    "episodes/token_budget_ended": "episodes ended by the token budget (share)",
}
PHASE_NAMES = {"sft": "SFT warm-up", "grpo": "GRPO"}


def plain_metric_name(key: str) -> str:
    """What a logged metric key means, in words."""
    return METRIC_NAMES.get(key, key.replace("/", " ").replace("_", " "))


def plain_phase_name(phase: str) -> str:
    return PHASE_NAMES.get(phase, phase.upper())
