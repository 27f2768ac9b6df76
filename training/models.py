"""Policies and their checkpoints, training runs with metrics, and recorded trajectories."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import PurePath

from django.db import models
from django.utils import timezone

from aw_site.models import Job
from environments.models import Environment
from tasks.models import Task
from tasks.reward_breakdown import RewardBreakdown
from tasks.trajectory import Step as StepRecord
from tasks.trajectory import ToolCall
from tasks.trajectory import Trajectory as TrajectoryRecord
from training.endpoint_url import validate_endpoint_url


class Policy(models.Model):
    class Kind(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible endpoint"
        LOCAL_HF = "local_hf", "Local Hugging Face model"
        GOLD = "gold", "Gold-chain replay (sanity baseline)"
        FAULT_INJECTION = "fault_injection", "Fault injection (calibrates diagnosis)"

    # Kinds that read the gold chain and play it back: no weights to train, and their runs
    # are the gold run itself (a viewer of an evaluation task sees their shape only).
    GOLD_REPLAY_KINDS = (Kind.GOLD, Kind.FAULT_INJECTION)

    name = models.SlugField(max_length=120)
    version = models.PositiveIntegerField(default=1)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    base_url = models.CharField(
        max_length=500,
        blank=True,
        validators=[validate_endpoint_url],
        help_text="For OpenAI-compatible endpoints (single-label hosts such as http://vllm:8000/v1 "
        "too); the key comes from env vars",
    )
    model_name = models.CharField(max_length=200, blank=True)
    checkpoint_path = models.CharField(max_length=500, blank=True)
    serves_checkpoint = models.CharField(
        max_length=500,
        blank=True,
        help_text="For endpoint policies: the Hugging Face checkpoint the endpoint serves (a hub "
        "id or a local directory); training the policy trains this checkpoint",
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    description = models.TextField(blank=True)
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text="For fault-injection policies: {fault, seed, clean_share} "
        "(training.policies.fault_injection.FaultConfig)",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "-version"]
        verbose_name_plural = "policies"
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="policy_unique_version")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class TrainingRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    base_policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="training_runs")
    output_policy = models.ForeignKey(
        Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="produced_by"
    )
    config = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="training_runs"
    )
    environments = models.ManyToManyField(Environment, blank=True, related_name="training_runs")
    summary = models.JSONField(default=dict, blank=True)
    failure_reason = models.TextField(blank=True)
    round_number = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"training run #{self.pk} of {self.base_policy}"


class TrainingTask(models.Model):
    """One task of a run's training set and where it came from (an expansion proposal of a
    round, a replay sample of earlier training tasks, or the environments' train split)."""

    class Source(models.TextChoices):
        EXPANSION = "expansion"
        REPLAY = "replay"
        TRAIN_SPLIT = "train_split"

    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="task_links")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="training_links")
    source = models.CharField(max_length=16, choices=Source.choices)
    proposal = models.PositiveIntegerField(
        null=True, blank=True, help_text="Id of the expansion proposal that created the task"
    )

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "task"], name="task_once_per_run"),
        ]


class TrainingMetric(models.Model):
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="metrics")
    phase = models.CharField(max_length=16, default="grpo")
    step = models.PositiveIntegerField()
    values = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "phase", "step"]
        indexes = [models.Index(fields=["run", "step"])]


class Checkpoint(models.Model):
    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="checkpoints")
    run = models.ForeignKey(
        TrainingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="checkpoints"
    )
    step = models.PositiveIntegerField(default=0)
    path = models.CharField(max_length=500)
    metrics = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["policy", "step"]

    @property
    def name(self) -> str:
        """The checkpoint's directory name ("sft", "checkpoint-40", "final"): what a viewer sees;
        the server path stays for reviewers."""
        return PurePath(self.path).name or f"checkpoint {self.step}"

    @property
    def label(self) -> str:
        """What the checkpoint is, in words: after SFT, a GRPO step, the final model."""
        name = self.name
        if name == "sft":
            return "after the SFT warm-up"
        if name == "final":
            return "final model"
        if name.startswith("checkpoint-") and name[len("checkpoint-") :].isdigit():
            return f"GRPO step {name[len('checkpoint-') :]}"
        return f"checkpoint {self.step + 1}"


class Trajectory(models.Model):
    """One episode of a policy on a task, step by step."""

    class FinishedReason(models.TextChoices):
        ANSWER = "answer"
        STEP_BUDGET = "step_budget"
        FORMAT_ERROR = "format_error"
        POLICY_ERROR = "policy_error"
        TOKEN_BUDGET = "token_budget"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="trajectories")
    environment = models.ForeignKey(
        Environment, on_delete=models.CASCADE, related_name="trajectories"
    )
    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="trajectories")
    training_run = models.ForeignKey(
        TrainingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="trajectories"
    )
    final_answer = models.TextField(blank=True)
    final_state_hash = models.CharField(max_length=64, blank=True)
    state_diff = models.JSONField(default=dict, blank=True)
    finished_reason = models.CharField(max_length=16, choices=FinishedReason.choices)
    reward = models.JSONField(default=dict, blank=True, help_text="Reward breakdown by component")
    total_reward = models.FloatField(default=0.0)
    success = models.BooleanField(default=False, db_index=True)
    step_count = models.PositiveIntegerField(default=0)
    tokens = models.PositiveIntegerField(default=0)
    duration_ms = models.FloatField(default=0.0)
    metadata = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the policy recorded of its run (a fault-injection policy: injected_fault)",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["environment", "success"]),
            models.Index(fields=["policy", "created_at"]),
            models.Index(fields=["created_at"], name="trajectory_created_at"),
        ]
        verbose_name_plural = "trajectories"

    def __str__(self) -> str:
        return f"trajectory #{self.pk} ({'success' if self.success else 'failed'})"

    def to_record(self, steps: Iterable[Step] | None = None) -> TrajectoryRecord:
        """The stored episode as the typed trajectory record the reward, the step comparison
        and diagnosis read (``steps``: the rows already fetched, else this row's steps)."""
        rows = self.steps.all() if steps is None else steps
        return TrajectoryRecord(
            task_id=str(self.task_id),
            environment=self.environment.name,
            steps=[step.to_record() for step in rows],
            final_answer=self.final_answer,
            final_state_hash=self.final_state_hash,
            state_diff=self.state_diff,
            finished_reason=self.finished_reason,
            duration_ms=self.duration_ms,
            reward=RewardBreakdown.from_dict(self.reward) if self.reward else None,
            metadata=self.metadata,
        )


class Step(models.Model):
    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    role = models.CharField(max_length=16)
    content = models.TextField(blank=True)
    tool_name = models.CharField(max_length=120, blank=True)
    tool_arguments = models.JSONField(null=True, blank=True)
    raw_tool_call = models.TextField(blank=True)
    tool_result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    error_kind = models.CharField(max_length=32, blank=True)
    state_diff = models.JSONField(null=True, blank=True)
    duration_ms = models.FloatField(default=0.0)
    tokens = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["trajectory", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["trajectory", "index"], name="step_unique_index_per_trajectory"
            )
        ]

    def __str__(self) -> str:
        return f"step {self.index} of trajectory {self.trajectory_id}"

    def to_record(self) -> StepRecord:
        """This row as a typed trajectory step (blank texts read as None, as a rollout
        records them)."""
        return StepRecord(
            index=self.index,
            role=self.role,
            content=self.content,
            tool_call=self.tool_call(),
            raw_tool_call=self.raw_tool_call or None,
            tool_result=self.tool_result,
            error=self.error or None,
            error_kind=self.error_kind or None,
            duration_ms=self.duration_ms,
            tokens=self.tokens,
        )

    def tool_call(self) -> ToolCall | None:
        """The stored call; arguments kept as JSON text are read back, and text that is no
        JSON object means the call never parsed."""
        if not self.tool_name:
            return None
        arguments = self.tool_arguments
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                return None
        if arguments is not None and not isinstance(arguments, dict):
            return None
        return ToolCall(self.tool_name, arguments or {})
