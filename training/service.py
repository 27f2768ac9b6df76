"""Policies, trajectories and training runs between the plain-Python trainer and the database."""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from environments.models import Environment
from tasks.models import Task
from tasks.records import spec_from_task
from training.models import Checkpoint, Policy, Step, TrainingMetric, TrainingRun, Trajectory

Progress = Callable[[float, str], None]


def _quiet(fraction: float, message: str = "") -> None:
    return None


def policies_root() -> Path:
    root = Path(settings.STORAGE_ROOT) / "policies"
    root.mkdir(parents=True, exist_ok=True)
    return root


def policy_client(policy: Policy, tasks: Sequence[Any] = ()) -> Any:
    """The runnable policy behind a Policy row; secrets come from the environment only."""
    if policy.kind == Policy.Kind.OPENAI:
        from training.policies import OpenAICompatiblePolicy

        return OpenAICompatiblePolicy(
            base_url=policy.base_url,
            model=policy.model_name or "default",
            api_key=os.environ.get("AW_POLICY_API_KEY", "") or "not-needed",
        )
    if policy.kind == Policy.Kind.LOCAL_HF:
        from training.policies import LocalHFPolicy

        if not policy.checkpoint_path or not Path(policy.checkpoint_path).is_dir():
            raise ValueError(f"{policy} has no checkpoint directory at {policy.checkpoint_path!r}")
        return LocalHFPolicy.from_pretrained(policy.checkpoint_path, max_new_tokens=128)
    from training.rollout import GoldChainPolicy

    return GoldChainPolicy(tasks)


def next_policy_version(name: str) -> int:
    latest = (
        Policy.objects.filter(name=name)
        .order_by("-version")
        .values_list("version", flat=True)
        .first()
    )
    return (latest or 0) + 1


def ensure_tiny_policy(name: str = "tiny-qwen2") -> Policy:
    """The embedded default's policy: a tiny Qwen2 with a tokenizer trained on our environments."""
    existing = (
        Policy.objects.filter(name=name, kind=Policy.Kind.LOCAL_HF).order_by("version").first()
    )
    if existing is not None:
        return existing
    from training.policies.tiny_model import build_tiny_policy

    environments = Environment.objects.filter(status=Environment.Status.VERIFIED)
    manifests = [env.manifest for env in environments]
    tasks = [
        spec_from_task(t).to_dict()
        for t in Task.objects.filter(split=Task.Split.TRAIN).select_related("environment")[:500]
    ]
    path = build_tiny_policy(policies_root() / f"{name}-v1", manifests, tasks)
    return Policy.objects.create(
        name=name,
        version=1,
        kind=Policy.Kind.LOCAL_HF,
        checkpoint_path=str(path),
        model_name="Qwen2 (hidden 64, 2 layers, random init)",
        description="Tiny local policy for the embedded default and tests; trained by evolution rounds.",
    )


@transaction.atomic
def record_trajectory(
    trajectory: Any,
    task: Task,
    policy: Policy,
    training_run: TrainingRun | None = None,
) -> Trajectory:
    """Store a rollout trajectory (training.rollout.Trajectory) with its ordered steps."""
    reward = trajectory.reward or {}
    steps = trajectory.steps
    row = Trajectory.objects.create(
        task=task,
        environment=task.environment,
        policy=policy,
        training_run=training_run,
        final_answer=trajectory.final_answer or "",
        final_state_hash=trajectory.final_state_hash or "",
        state_diff=trajectory.state_diff or {},
        finished_reason=trajectory.finished_reason,
        reward=reward,
        total_reward=float(reward.get("total", 0.0)),
        success=bool(reward.get("success", False)),
        step_count=len(steps),
        tokens=(trajectory.tokens_in or 0) + (trajectory.tokens_out or 0),
        duration_ms=trajectory.duration_ms or 0.0,
    )
    Step.objects.bulk_create(
        [
            Step(
                trajectory=row,
                index=step.index,
                role=step.role,
                content=step.content or "",
                tool_name=(step.tool_call or {}).get("name", "") or "",
                tool_arguments=(step.tool_call or {}).get("arguments"),
                raw_tool_call=step.raw_tool_call or "",
                tool_result=step.tool_result,
                error=step.error or "",
                error_kind=step.error_kind or "",
                duration_ms=step.duration_ms or 0.0,
                tokens=step.tokens or 0,
            )
            for step in steps
        ]
    )
    return row


def evaluate_tasks(
    policy: Policy,
    tasks: Sequence[Task],
    pool: Any,
    concurrency: int = 4,
    step_budget: int = 40,
) -> list[tuple[Task, Any]]:
    """Run the policy on each task in a fresh episode and score it with the shared reward.

    The step budget covers the longest gold run with room to spare (a 40-call walk needs its
    40 calls and the answer): at least ``step_budget`` turns, at least the longest gold chain
    plus 5."""
    from environments.package import load_package
    from training.rollout import rollout_many
    from training.rollout.agent_loop import RolloutSettings
    from training.rollout.evaluation import score_trajectories

    specs = [spec_from_task(task) for task in tasks]
    packages = {
        task.environment.name: load_package(task.environment.package_path) for task in tasks
    }
    client = policy_client(policy, specs)
    trajectories = rollout_many(
        client,
        specs,
        packages,
        concurrency=concurrency,
        pool=pool,
        settings=RolloutSettings(
            step_budget=max(step_budget, 5 + max((len(s.gold_chain) for s in specs), default=0))
        ),
    )
    score_trajectories(specs, trajectories)
    return list(zip(tasks, trajectories, strict=True))


TRAINING_DEFAULTS = {
    "sft_epochs": 20,
    "grpo_steps": 2,
    "num_generations": 4,
    "max_completion_length": 48,
    "learning_rate": 1e-5,
    "tasks_per_environment": 6,
    "seed": 0,
    "use_vllm": False,
    "task_kinds": ["graph", "programmatic"],
    "exclude_uniform": False,
}
TRAINING_OPTIONS_HELP = {
    "task_kinds": "kinds of train-split tasks to train on (graph, programmatic), taken in turns",
    "exclude_uniform": "leave out tasks a policy's rollouts always or never solved "
    "(Task.consistency, measured by the synthesis job): no learning signal",
}


def training_tasks(
    run: TrainingRun,
    per_environment: int,
    kinds: Sequence[str] = ("graph", "programmatic"),
    exclude_uniform: bool = False,
) -> list[Task]:
    """Train-split tasks of the run's environments: per environment the easiest of each kind
    in ``kinds``, taken in turns up to ``per_environment``; ``exclude_uniform`` leaves out the
    tasks every or no rollout solved."""
    from tasks.models import UNIFORM_CONSISTENCY

    environments = list(run.environments.all()) or list(
        Environment.objects.filter(status=Environment.Status.VERIFIED)
    )
    tasks: list[Task] = []
    for environment in environments:
        by_kind = []
        for kind in kinds:
            chosen = Task.objects.filter(
                environment=environment, split=Task.Split.TRAIN, kind=kind
            ).select_related("environment")
            if exclude_uniform:
                chosen = chosen.exclude(consistency__in=UNIFORM_CONSISTENCY)
            by_kind.append(list(chosen.order_by("difficulty", "id")[:per_environment]))
        taken: list[Task] = []
        while len(taken) < per_environment and any(by_kind):
            for queue in by_kind:
                if queue and len(taken) < per_environment:
                    taken.append(queue.pop(0))
        tasks.extend(taken)
    return tasks


def train(run: TrainingRun, progress: Progress = _quiet) -> TrainingRun:
    """SFT warm-up on gold trajectories then GRPO; metrics and checkpoints go to the database."""
    import torch

    from training.grpo.config import TrainingConfig
    from training.grpo.trainer import run_training

    base = run.base_policy
    if base.kind != Policy.Kind.LOCAL_HF:
        raise ValueError(
            f"{base} is a {base.get_kind_display()} policy; only local Hugging Face policies have weights to train"
        )
    options = {**TRAINING_DEFAULTS, **(run.config or {})}
    tasks = training_tasks(
        run,
        options["tasks_per_environment"],
        kinds=options["task_kinds"],
        exclude_uniform=bool(options["exclude_uniform"]),
    )
    if not tasks:
        raise ValueError(
            f"no train-split tasks ({', '.join(options['task_kinds'])}) in the chosen "
            "environments; synthesize tasks first"
        )
    packages = sorted({task.environment.package_path for task in tasks})
    output_dir = Path(settings.STORAGE_ROOT) / "training" / f"run-{run.pk}"
    config = TrainingConfig(
        packages=packages,
        model_path=base.checkpoint_path,
        output_dir=str(output_dir),
        seed=options["seed"],
        sft_epochs=options["sft_epochs"],
        max_steps=options["grpo_steps"],
        learning_rate=options["learning_rate"],
        num_generations=options["num_generations"],
        max_completion_length=options["max_completion_length"],
        use_cpu=not torch.cuda.is_available(),
        use_vllm=options["use_vllm"],
        eval_before_after=False,
        save_steps=max(1, options["grpo_steps"]),
    )
    TrainingRun.objects.filter(pk=run.pk).update(status=TrainingRun.Status.RUNNING)
    # A retry after a lost worker starts afresh: its curves, metrics.jsonl and checkpoints.
    run.metrics.all().delete()
    shutil.rmtree(output_dir, ignore_errors=True)
    total_steps = max(1, options["grpo_steps"])

    def on_metrics(step: int, record: dict[str, Any]) -> None:
        values = dict(record)
        phase = str(values.pop("phase", "grpo"))
        TrainingMetric.objects.create(
            run=run, phase=phase, step=int(step), values=_jsonable(values)
        )
        if phase == "grpo":
            progress(
                0.3 + 0.65 * min(1.0, step / total_steps),
                f"GRPO step {step}: reward {values.get('reward_mean', 0):.3f}",
            )
        else:
            progress({"gold": 0.05, "sft": 0.3}.get(phase, 0.1), f"{phase} done")

    checkpoints: list[str] = []
    progress(0.02, f"training on {len(tasks)} tasks from {len(packages)} environments")
    result = run_training(
        config,
        tasks=[spec_from_task(t) for t in tasks],
        on_metrics=on_metrics,
        on_checkpoint=checkpoints.append,
    )
    with transaction.atomic():
        output = Policy.objects.create(
            name=base.name,
            version=next_policy_version(base.name),
            kind=Policy.Kind.LOCAL_HF,
            checkpoint_path=result.final_checkpoint,
            model_name=base.model_name,
            parent=base,
            description=f"Trained by training run {run.pk}",
        )
        for index, path in enumerate(checkpoints):
            Checkpoint.objects.create(policy=output, run=run, step=index, path=path)
        run.output_policy = output
        run.status = TrainingRun.Status.SUCCEEDED
        run.summary = _jsonable(
            {
                "gold": result.gold,
                "sft": result.sft,
                "grpo": result.grpo,
                "tasks": len(tasks),
                "tasks_by_kind": {
                    kind: sum(1 for t in tasks if t.kind == kind) for kind in options["task_kinds"]
                },
            }
        )
        run.finished_at = timezone.now()
        run.save(update_fields=["output_policy", "status", "summary", "finished_at"])
    return run


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None  # jsonb (PostgreSQL) refuses NaN
    if isinstance(value, int | str | bool) or value is None:
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return number if math.isfinite(number) else None
