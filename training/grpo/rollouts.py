"""GRPO rollouts through TRL's ``rollout_func``, played by our own token-level agent loop.

Why ``rollout_func`` rather than TRL's ``environment_factory``: the factory turns Python methods
into tools, so tool schemas are rebuilt from signatures (enums and formats lost), tools or
parameters whose names are not Python identifiers (``yield``, ``from``, ``order-id``) cannot be
exposed at all, results and errors are rendered by TRL rather than as evaluation renders them,
and a completion cut by the token budget may already have run its write. Here the trainer only
generates: :mod:`training.rollout.token_loop` renders the prompt and tool results with the one
agent view (:mod:`tasks.agent_view`), passes the manifest's schemas untouched to the chat
template, parses calls with the evaluation parser, enforces the token budget before a call runs,
and scores each episode with ``tasks.reward.score``. Tool names reach the model exactly as the
environment declares them.

Learnability filter: a task whose whole group earned the same reward gives GRPO no signal (zero
advantage). Such tasks are marked unlearnable (shared across processes) and, from the next step
on, every group that would have played one plays a learnable task instead (chosen
deterministically from the step and the prompt, so processes agree).
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from tasks.agent_view import AgentView, agent_view
from training.rollout.agent_loop import RolloutSettings, package_manifest, task_fields
from training.rollout.token_loop import (
    ChatTokens,
    TokenBudget,
    TurnGenerator,
    close_episode,
    play,
    start_episode,
)


class TrainerGenerator:
    """One assistant turn per sequence from the model GRPO is training (transformers or vLLM,
    whichever the trainer is configured with; weights are synced by TRL before the call)."""

    def __init__(self, trainer: Any):
        self.trainer = trainer

    def generate(self, sequences: list[list[int]]) -> list[tuple[list[int], list[float] | None]]:
        ids, logprobs = self.trainer._generate_single_turn(sequences, None, {}, 1)
        if logprobs is None:
            return [(list(c), None) for c in ids]
        return [(list(c), list(lp)) for c, lp in zip(ids, logprobs, strict=True)]


def prompt_key(messages: list[dict[str, Any]]) -> str:
    """The identity of a dataset prompt (the rows carry no other field into rollout_func)."""
    text = json.dumps(messages, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class AgentWorldRollouts:
    """The ``rollout_func`` of a run: plays each prompt's task, returns tokens and rewards."""

    def __init__(
        self,
        tasks: list[Any],
        packages: dict[str, Any],
        pool: Any,
        tokenizer: Any,
        settings: RolloutSettings,
        budget: TokenBudget,
        generator_factory: Callable[[Any], TurnGenerator] = TrainerGenerator,
        learnability_filter: bool = True,
    ):
        self.packages = packages
        self.pool = pool
        self.chat = ChatTokens(tokenizer)
        self.settings = settings
        self.budget = budget
        self.generator_factory = generator_factory
        self.learnability_filter = learnability_filter
        self.views: dict[str, AgentView] = {}
        self.tasks: dict[str, Any] = {}
        self.by_prompt: dict[str, str] = {}
        manifests = {name: package_manifest(p) for name, p in packages.items()}
        for task in tasks:
            task_id, environment, instruction = task_fields(task)
            view = agent_view(task, manifests[environment], instruction)
            self.views[task_id], self.tasks[task_id] = view, task
            self.by_prompt[prompt_key(view.messages())] = task_id
        self.unlearnable: set[str] = set()
        self.substituted = 0

    def _task_id(self, prompt: list[dict[str, Any]]) -> str:
        try:
            return self.by_prompt[prompt_key(prompt)]
        except KeyError:
            raise ValueError("a GRPO prompt matches no task of this run") from None

    def _replacement(self, task_id: str, step: int) -> str:
        """A learnable stand-in for an unlearnable task (the task itself when none is left)."""
        if task_id not in self.unlearnable:
            return task_id
        learnable = sorted(set(self.tasks) - self.unlearnable)
        if not learnable:
            return task_id
        digest = hashlib.sha256(f"{task_id}:{step}".encode()).digest()
        return learnable[int.from_bytes(digest[:8], "big") % len(learnable)]

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer: Any) -> dict[str, Any]:
        from tasks.reward import score

        step = int(getattr(getattr(trainer, "state", None), "global_step", 0) or 0)
        chosen = []
        for prompt in prompts:
            original = self._task_id(prompt)
            replacement = (
                self._replacement(original, step) if self.learnability_filter else original
            )
            self.substituted += replacement != original
            chosen.append(replacement)
        states = []
        try:
            for task_id in chosen:
                task, view = self.tasks[task_id], self.views[task_id]
                package = self.packages[task_fields(task)[1]]
                states.append(start_episode(task, view, package, self.pool, self.chat, self.budget))
            play(states, self.generator_factory(trainer), self.chat, self.settings, self.budget)
        finally:
            trajectories = [close_episode(s) for s in states]
        rewards, successes = [], []
        for task_id, trajectory in zip(chosen, trajectories, strict=True):
            breakdown = score(self.tasks[task_id], trajectory)
            trajectory.reward = breakdown
            rewards.append(breakdown.total)
            successes.append(1.0 if breakdown.success else 0.0)
        self._update_learnability(chosen, rewards, trainer)
        self._log(trainer, trajectories, successes)
        self.last_trajectories = trajectories
        return {
            "prompt_ids": [s.prompt_ids for s in states],
            "completion_ids": [s.completion_ids for s in states],
            "logprobs": [s.logprobs for s in states],
            "env_mask": [s.env_mask for s in states],
            "agent_world_reward": rewards,
            "agent_world_success": successes,
        }

    def _update_learnability(self, chosen: list[str], rewards: list[float], trainer: Any) -> None:
        """Mark tasks whose whole group (all ``num_generations`` here) got one reward."""
        if not self.learnability_filter:
            return
        size = int(getattr(trainer, "num_generations", 0) or 0)
        groups: dict[str, list[float]] = defaultdict(list)
        for task_id, reward in zip(chosen, rewards, strict=True):
            groups[task_id].append(reward)
        flat = [t for t, r in groups.items() if size and len(r) >= size and max(r) == min(r)]
        accelerator = getattr(trainer, "accelerator", None)
        if accelerator is not None and accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            flat = gather_object(flat)
        self.unlearnable.update(flat)

    def _log(self, trainer: Any, trajectories: list[Any], successes: list[float]) -> None:
        metrics = getattr(trainer, "_metrics", None)
        if metrics is None or not trajectories:
            return
        mode = "train" if getattr(trainer.model, "training", True) else "eval"
        calls = [
            len([c for c in t.tool_calls if c["tool"] != "submit_answer"]) for t in trajectories
        ]
        failed = [len([c for c in t.tool_calls if not c["ok"]]) for t in trajectories]
        reasons = [t.finished_reason for t in trajectories]
        metrics[mode]["tools/call_frequency"].append(statistics.fmean(calls))
        metrics[mode]["tools/failure_frequency"].append(
            sum(failed) / sum(calls) if sum(calls) else 0.0
        )
        metrics[mode]["success_rate"].append(statistics.fmean(successes))
        metrics[mode]["episodes/token_budget_ended"].append(
            reasons.count("token_budget") / len(reasons)
        )
        metrics[mode]["learnability/unlearnable_tasks"].append(float(len(self.unlearnable)))
        metrics[mode]["learnability/substituted"].append(float(self.substituted))


def agent_world_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """The reward ``AgentWorldRollouts`` computed (``tasks.reward.score`` of each episode)."""
    rewards = kwargs.get("agent_world_reward")
    if rewards is None:
        raise ValueError("agent_world_reward needs the rollouts of AgentWorldRollouts")
    return [float(r) for r in rewards]
