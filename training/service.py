"""Policies, trajectories and training runs between the plain-Python trainer and the database."""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from aw_site.labels import in_words
from environments.models import Environment
from environments.versions import current_versions
from tasks.models import Task
from tasks.records import spec_from_task
from tasks.trajectory import Trajectory as TrajectoryRecord
from training.models import (
    Checkpoint,
    Policy,
    Step,
    TrainingMetric,
    TrainingRun,
    TrainingTask,
    Trajectory,
)
from training.policies.base import PolicyError

Progress = Callable[[float, str], None]
log = logging.getLogger(__name__)
ENV_POLICY_DESCRIPTION = (
    "Endpoint policy registered from AW_POLICY_BASE_URL / AW_POLICY_MODEL / AW_POLICY_CHECKPOINT"
)


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
        from training.policies.local_hf import cached_policy

        if not policy.checkpoint_path or not Path(policy.checkpoint_path).is_dir():
            raise ValueError(f"{policy} has no checkpoint directory at {policy.checkpoint_path!r}")
        # One loaded model per checkpoint in this process: a job evaluating in chunks loads once.
        return cached_policy(policy.checkpoint_path, max_new_tokens=128)
    if policy.kind == Policy.Kind.FAULT_INJECTION:
        from training.policies.fault_injection import FaultConfig, FaultInjectionPolicy

        config = FaultConfig.model_validate(policy.config or {})
        return FaultInjectionPolicy(tasks, **config.model_dump())
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


def env_policy_fields() -> dict[str, str] | None:
    """The endpoint policy the AW_POLICY_* variables describe, or None when none is set.

    ``AW_POLICY_NAME`` names it (default: the model's last path part, slugified).
    """
    base_url = os.environ.get("AW_POLICY_BASE_URL", "").strip()
    if not base_url:
        return None
    model = os.environ.get("AW_POLICY_MODEL", "").strip()
    name = os.environ.get("AW_POLICY_NAME", "").strip() or model.rstrip("/").split("/")[-1]
    return {
        "name": slugify(name)[:120] or "endpoint",
        "base_url": base_url,
        "model_name": model,
        "serves_checkpoint": os.environ.get("AW_POLICY_CHECKPOINT", "").strip(),
    }


def ensure_env_policy() -> Policy | None:
    """Register the endpoint policy of the AW_POLICY_* variables (idempotent).

    The newest endpoint version of that name is reused while it matches the variables; when they
    change (another model, URL or served checkpoint) a new version is registered. Called when
    the embedded run and Celery workers start, after migrations, and by the policy lists.
    """
    fields = env_policy_fields()
    if fields is None:
        return None

    def matching() -> Policy | None:
        latest = (
            Policy.objects.filter(name=fields["name"], kind=Policy.Kind.OPENAI)
            .order_by("-version")
            .first()
        )
        if latest is not None and all(getattr(latest, k) == v for k, v in fields.items()):
            return latest
        return None

    existing = matching()
    if existing is not None:
        return existing
    for _ in range(3):  # two processes starting at once may race for the version number
        try:
            with transaction.atomic():
                policy = Policy.objects.create(
                    kind=Policy.Kind.OPENAI,
                    version=next_policy_version(fields["name"]),
                    description=ENV_POLICY_DESCRIPTION,
                    **fields,
                )
        except IntegrityError:
            existing = matching()
            if existing is not None:
                return existing
            continue
        log.info("registered endpoint policy %s from AW_POLICY_*", policy)
        return policy
    raise RuntimeError(f"could not register the endpoint policy {fields['name']!r}")


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
    trajectory: TrajectoryRecord,
    task: Task,
    policy: Policy,
    training_run: TrainingRun | None = None,
) -> Trajectory:
    """Store a trajectory record with its ordered steps (``Trajectory.to_record`` reads it back)."""
    reward = trajectory.reward
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
        reward=reward.to_dict() if reward is not None else {},
        total_reward=reward.total if reward is not None else 0.0,
        success=reward is not None and reward.success,
        step_count=len(steps),
        tokens=(trajectory.tokens_in or 0) + (trajectory.tokens_out or 0),
        duration_ms=trajectory.duration_ms or 0.0,
        metadata=trajectory.metadata or {},
    )
    Step.objects.bulk_create(
        [
            Step(
                trajectory=row,
                index=step.index,
                role=step.role,
                content=step.content or "",
                tool_name=step.tool_name or "",
                tool_arguments=step.tool_call.arguments if step.tool_call else None,
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


# A request too long for the model's context fails that episode only, not the policy.
_EPISODE_SPECIFIC = re.compile(
    r"context length|context window|maximum context|max_model_len|too many tokens|"
    r"prompt is too long|input is too long",
    re.IGNORECASE,
)


def policy_failure(policy: Policy, trajectories: Sequence[Any]) -> str | None:
    """Why the policy itself failed (endpoint down, auth, generation broken), or None.

    Episodes that ended in a policy error because their own conversation outgrew the model's
    context stay failed episodes; any other policy error fails the evaluation with its message.
    """
    errors = [
        (t.steps[-1].error if t.steps else "") or "policy error"
        for t in trajectories
        if t.finished_reason == "policy_error"
    ]
    fatal = [e for e in errors if not _EPISODE_SPECIFIC.search(e)]
    if not fatal:
        return None
    return f"{policy} failed in {len(errors)} of {len(trajectories)} episodes: {fatal[0]}"


def evaluate_tasks(
    policy: Policy,
    tasks: Sequence[Task],
    pool: Any,
    concurrency: int = 8,
    step_budget: int = 40,
) -> list[tuple[Task, Any]]:
    """Run the policy on each task in a fresh episode and score it with the shared reward.

    Raises PolicyError with the endpoint's (or generator's) message when the policy failed,
    rather than scoring its failures as the agent's. The step budget covers the longest gold
    run with room to spare: at least ``step_budget`` turns, at least the longest gold chain + 5.
    """
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
    failure = policy_failure(policy, trajectories)
    if failure:
        raise PolicyError(failure)
    score_trajectories(specs, trajectories)
    return list(zip(tasks, trajectories, strict=True))


def training_tasks(
    run: TrainingRun,
    per_environment: int,
    split: str = Task.Split.TRAIN,
    kinds: Sequence[str] = ("graph", "programmatic"),
    exclude_uniform: bool = False,
) -> list[Task]:
    """Tasks of ``split`` from the run's environments (every verified one when none chosen):
    the training set from ``train``, the evaluation set from ``heldout`` (never overlapping: a
    task has one split). Per environment the easiest of each kind in ``kinds``, taken in turns
    up to ``per_environment``; ``exclude_uniform`` leaves out the tasks every or no rollout
    solved (no learning signal). Tasks a reviewer marked unclear, wrong gold or meaningless are
    never taken (``Task.objects.usable``)."""
    from tasks.models import UNIFORM_CONSISTENCY

    # None chosen: every verified environment at its current version (not a superseded parent).
    environments = list(run.environments.all()) or current_versions(
        Environment.objects.filter(status=Environment.Status.VERIFIED)
    )
    tasks: list[Task] = []
    for environment in environments:
        by_kind = []
        for kind in kinds:
            chosen = (
                Task.objects.usable()
                .filter(environment=environment, split=split, kind=kind)
                .select_related("environment")
            )
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


def fail_unfinished_run(run_id: int | None, reason: str) -> None:
    """A queued or running run whose job can no longer finish is failed with the reason."""
    TrainingRun.objects.filter(
        pk=run_id, status__in=[TrainingRun.Status.QUEUED, TrainingRun.Status.RUNNING]
    ).update(status=TrainingRun.Status.FAILED, failure_reason=reason, finished_at=timezone.now())


class UntrainablePolicy(ValueError):
    """The base policy of a run has no weights to train."""


def untrainable_reason(policy: Policy) -> str | None:
    """Why ``policy`` cannot be a run's base, decided from its kind before a job is queued
    (whether a served directory exists is the worker's to check: it may be another machine)."""
    if policy.kind in Policy.GOLD_REPLAY_KINDS:
        return (
            f"{policy} is a {policy.get_kind_display()} policy: it plays the gold chains back and "
            "has no weights to train; choose a local Hugging Face policy, or an endpoint policy "
            "that names the checkpoint it serves"
        )
    if policy.kind == Policy.Kind.OPENAI and not policy.serves_checkpoint.strip():
        return (
            f"{policy} is an endpoint policy that names no checkpoint it serves, so there are no "
            "weights to train: set its serves_checkpoint"
        )
    return None


def start_training_run(
    user: Any,
    base_policy: Policy,
    environments: Sequence[Environment] = (),
    options: dict[str, Any] | None = None,
) -> TrainingRun:
    """Create a run and queue its ``training.train`` job (API and console both come here).

    ``options`` must already be valid ``RunOptions`` (the callers report errors field by
    field); environments must be verified and the policy trainable (``UntrainablePolicy``)."""
    from aw_site.jobs import enqueue

    reason = untrainable_reason(base_policy)
    if reason:
        raise UntrainablePolicy(reason)
    unverified = [e.name for e in environments if e.status != Environment.Status.VERIFIED]
    if unverified:
        raise ValueError(f"training uses verified environments only: {', '.join(unverified)}")
    with transaction.atomic():
        run = TrainingRun.objects.create(base_policy=base_policy, config=dict(options or {}))
        run.environments.set(environments)
        run.job = enqueue(
            "training.train", {"run": run.pk}, user=user, target=f"training_run:{run.pk}"
        )
        run.save(update_fields=["job"])
    return run


def trainable_checkpoint(policy: Policy) -> str:
    """The weights training a policy starts from: a local policy's checkpoint directory, or
    the checkpoint an endpoint policy serves (a Hugging Face hub id or a local directory)."""
    if policy.kind == Policy.Kind.LOCAL_HF:
        return policy.checkpoint_path
    if policy.kind == Policy.Kind.OPENAI:
        served = policy.serves_checkpoint.strip()
        if not served:
            raise ValueError(
                f"{policy} is an endpoint policy ({policy.base_url}) that names no checkpoint it "
                "serves, so there are no weights to train: set its serves_checkpoint to the "
                "Hugging Face hub id or local directory the endpoint serves (AW_POLICY_CHECKPOINT "
                "for the policy registered from AW_POLICY_*)"
            )
        if served.startswith(("/", "./", "../", "~")) and not Path(served).expanduser().is_dir():
            raise ValueError(
                f"{policy} serves the checkpoint {served!r}, which is not a directory here"
            )
        return str(Path(served).expanduser()) if served.startswith("~") else served
    raise ValueError(
        f"{policy} is a {policy.get_kind_display()} policy; only local Hugging Face policies and "
        "endpoint policies that name the checkpoint they serve have weights to train"
    )


def train(
    run: TrainingRun, progress: Progress = _quiet, trainer: Callable[..., Any] | None = None
) -> TrainingRun:
    """SFT warm-up on gold trajectories then GRPO; metrics and checkpoints go to the database.

    An endpoint policy trains the checkpoint it serves; the result is a new local version of
    the policy (serve it through the endpoint again, or evaluate it locally). ``trainer``
    stands in for ``training.grpo.trainer.run_training`` (tests).
    """
    base = run.base_policy
    model_path = trainable_checkpoint(base)  # before the heavy imports: a bad base fails fast

    import torch

    from training.grpo.config import TrainingConfig
    from training.policies.local_hf import release_cached_policies
    from training.run_options import RunOptions

    if trainer is None:
        from training.grpo.trainer import run_training as trainer

    options = RunOptions.model_validate(run.config or {})
    listed = [link.task for link in run.task_links.select_related("task__environment")]
    tasks = listed or training_tasks(
        run,
        options.tasks_per_environment,
        kinds=options.task_kinds,
        exclude_uniform=options.exclude_uniform,
    )
    if not listed:  # the run lists the set it trained on, whichever way it was chosen
        TrainingTask.objects.bulk_create(
            [TrainingTask(run=run, task=t, source=TrainingTask.Source.TRAIN_SPLIT) for t in tasks],
            ignore_conflicts=True,
        )
    if not tasks:
        raise ValueError(
            f"no train-split tasks ({', '.join(options.task_kinds)}) in the chosen "
            "environments; synthesize tasks first"
        )
    held_out = training_tasks(
        run, options.heldout_per_environment, Task.Split.HELDOUT, kinds=options.task_kinds
    )
    held_out = held_out if options.heldout_per_environment else []
    packages = sorted({task.environment.package_path for task in tasks})
    output_dir = Path(settings.STORAGE_ROOT) / "training" / f"run-{run.pk}"
    config = TrainingConfig.from_options(
        options,
        packages=packages,
        model_path=model_path or None,
        output_dir=str(output_dir),
        use_cpu=not torch.cuda.is_available(),
    )
    TrainingRun.objects.filter(pk=run.pk).update(status=TrainingRun.Status.RUNNING)
    # A retry after a lost worker starts afresh: its curves, metrics.jsonl and checkpoints.
    run.metrics.all().delete()
    shutil.rmtree(output_dir, ignore_errors=True)
    total_steps = max(1, options.grpo_steps)

    def on_metrics(step: int, record: dict[str, Any]) -> None:
        values = dict(record)
        phase = str(values.pop("phase", "grpo"))
        TrainingMetric.objects.create(
            run=run, phase=phase, step=int(step), values=_jsonable(values)
        )
        if phase == "sft_step":
            done = min(1.0, step / max(1, int(values.get("steps_total") or 1)))
            progress(
                0.1 + 0.2 * done,
                f"SFT step {step}/{values.get('steps_total')}: loss {values.get('loss', 0):.3f}",
            )
        elif phase == "grpo":
            progress(
                0.3 + 0.65 * min(1.0, step / total_steps),
                f"GRPO step {step}: reward {values.get('reward_mean', 0):.3f}",
            )
        else:
            progress(
                {"gold": 0.05, "eval_before": 0.1, "sft": 0.3, "eval_after": 0.98}.get(phase, 0.2),
                f"{in_words(phase)} done",
            )

    checkpoints: list[str] = []
    release_cached_policies()  # evaluation models leave their memory to the trainer
    progress(
        0.02,
        f"training {model_path or 'a new tiny model'} on {len(tasks)} tasks "
        f"from {len(packages)} environments",
    )
    result = trainer(
        config,
        tasks=[spec_from_task(t) for t in tasks],
        on_metrics=on_metrics,
        on_checkpoint=checkpoints.append,
        eval_tasks=[spec_from_task(t) for t in held_out],
    )
    with transaction.atomic():
        output = Policy.objects.create(
            name=base.name,
            version=next_policy_version(base.name),
            kind=Policy.Kind.LOCAL_HF,
            checkpoint_path=result.final_checkpoint,
            model_name=base.model_name,
            parent=base,
            description=trained_description(base, run),
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
                "heldout_tasks": len(held_out),
                "eval_before": result.eval_before,
                "eval_after": result.eval_after,
                "tasks_by_kind": {
                    kind: sum(1 for t in tasks if t.kind == kind) for kind in options.task_kinds
                },
            }
        )
        run.finished_at = timezone.now()
        run.save(update_fields=["output_policy", "status", "summary", "finished_at"])
    return run


def trained_description(base: Policy, run: TrainingRun) -> str:
    if base.kind == Policy.Kind.OPENAI:
        return (
            f"Trained by training run {run.pk} from endpoint policy {base} ({base.base_url}, "
            f"checkpoint {base.serves_checkpoint}); serve this checkpoint through the endpoint "
            "again, or evaluate it as a local policy"
        )
    return f"Trained by training run {run.pk}"


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
