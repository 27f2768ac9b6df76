"""The GRPO reward: close each rollout's episode record and score it with ``tasks.reward``.

The trainer hands every reward function the environment instance of each completion; the
instance holds the sandbox episode and the tool calls it served, so the reward is computed from
the same evidence (final answer, state hash, row diff, call steps, verification verdict) as any
rollout trajectory. The answer is the rollout's ``submit_answer`` submission when it made one,
else its final message.
"""

from __future__ import annotations

from typing import Any

from training.policies.tool_call_parser import TOOL_CALL_CLOSE, TOOL_CALL_OPEN


def final_turn(completion: Any) -> tuple[str | None, str]:
    """(final answer, finished reason) from a completion: a message list or plain text."""
    if isinstance(completion, str):
        messages = [{"role": "assistant", "content": completion}]
    else:
        messages = list(completion or [])
    last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    if last is None or last.get("tool_calls"):
        return None, "step_budget"  # ran out of turns or tokens while still calling tools
    content = str(last.get("content") or "")
    if TOOL_CALL_OPEN in content or TOOL_CALL_CLOSE in content:
        return None, "format_error"  # a tool call the parser could not read
    return content.strip(), "answer"


def agent_world_reward(
    completions: list[Any], environments: list[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """Reward of each completion: ``tasks.reward.score(task, trajectory).total``.

    Also logs ``success`` (answer and state fully correct) through TRL's ``log_metric``.
    """
    from tasks.reward import score

    if environments is None:
        raise ValueError("agent_world_reward needs environment_factory environments")
    log_metric = kwargs.get("log_metric")
    rewards: list[float | None] = []
    successes = []
    for completion, environment in zip(completions, environments, strict=True):
        answer, reason = final_turn(completion)
        trajectory = environment._finish(answer, reason)
        breakdown = score(environment._task, trajectory)
        trajectory.reward = breakdown.to_dict()
        rewards.append(breakdown.total)
        successes.append(1.0 if breakdown.success else 0.0)
    if log_metric is not None and successes:
        log_metric("success_rate", sum(successes) / len(successes))
    return rewards
