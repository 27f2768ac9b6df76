"""Calibration episodes without the database: tasks synthesized in packages, every fault of the
fault-injection policy played on each of them, the detectors' labels set against the faults.

The benchmark (``benchmarks/diagnosis_accuracy.py``) and the tests use it; the API's calibration
reads the same figures from a stored evaluation (``arena.calibration``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arena.calibration import Calibration, CalibrationEpisode, calibrate, episode_of
from tasks.reward_breakdown import RewardBreakdown
from tasks.synthesis.environment_view import package_manifest
from tasks.synthesis.task_spec import TaskSpec
from training.policies.fault_injection import FaultInjectionPolicy
from training.policies.fault_plans import FAULTS, NO_FAULT
from training.rollout.agent_loop import DEFAULT_STEP_BUDGET, RolloutSettings, rollout_many
from training.rollout.evaluation import score_trajectories

# Read walks and write workflows: every fault needs some task it applies to alone.
GRAPH_PLANS = (
    {"steps": 3, "distractors": 2, "min_steps": 2},
    {"steps": 4, "writes": 1, "distractors": 2, "min_steps": 2},
    {"steps": 5, "writes": 2, "distractors": 2, "min_steps": 3},
)


def synthesize_calibration_tasks(
    package: Any,
    pool: Any,
    graph: int = 6,
    programs: int = 2,
    seed: int = 0,
    tier: str = "explicit",
) -> list[TaskSpec]:
    """Verified graph tasks spread over ``GRAPH_PLANS`` and programmatic tasks of a package."""
    from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
    from tasks.synthesis.programmatic_tasks import synthesize_programmatic_tasks

    tasks: list[TaskSpec] = []
    with GraphTaskSynthesizer(package, pool, llm=None, tier=tier) as synthesizer:
        for index, plan in enumerate(GRAPH_PLANS):
            share = graph // len(GRAPH_PLANS) + (1 if index < graph % len(GRAPH_PLANS) else 0)
            if share:
                tasks += synthesizer.synthesize(
                    share, Difficulty(**plan), seed=seed + 1000 * index, max_walks=share * 8
                )
    if programs:
        tasks += synthesize_programmatic_tasks(
            package, pool, programs, seed=seed, llm=None, tier=tier
        )
    return tasks


def play_faults(
    tasks: Sequence[TaskSpec],
    packages: Mapping[str, Any],
    pool: Any,
    *,
    faults: Sequence[str] = (*FAULTS, NO_FAULT),
    seed: int = 0,
    concurrency: int = 4,
) -> list[CalibrationEpisode]:
    """Every task once per fault (a fault a task does not allow alone plays as a clean run)."""
    tool_kinds = {
        name: dict(package_manifest(package).get("tool_kinds", {}))
        for name, package in packages.items()
    }
    longest = max((len(t.gold_chain) for t in tasks), default=0)
    settings = RolloutSettings(step_budget=max(DEFAULT_STEP_BUDGET, longest + 5))
    episodes: list[CalibrationEpisode] = []
    for fault in faults:
        policy = FaultInjectionPolicy(tasks, fault=fault, seed=seed, tool_kinds=tool_kinds)
        trajectories = rollout_many(policy, tasks, packages, concurrency, pool, settings)
        score_trajectories(tasks, trajectories)
        for task, trajectory in zip(tasks, trajectories, strict=True):
            episode = episode_of(
                trajectory,
                task,
                trajectory.reward or RewardBreakdown.unscored(),
                tool_kinds.get(task.environment),
            )
            if episode is not None:
                episodes.append(episode)
    return episodes


def run_calibration(
    tasks: Sequence[TaskSpec], packages: Mapping[str, Any], pool: Any, **options: Any
) -> Calibration:
    return calibrate(play_faults(tasks, packages, pool, **options))
