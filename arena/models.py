"""Evolution rounds, arena evaluations, diagnoses and the expansions reviewers approve."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from aw_site.models import Job
from environments.models import Category, Environment
from training.models import Policy, TrainingRun, Trajectory

if TYPE_CHECKING:
    from arena.round_config import RoundConfig


class EvolutionRound(models.Model):
    class Status(models.TextChoices):
        EVALUATING = "evaluating"
        DIAGNOSING = "diagnosing"
        AWAITING_APPROVAL = "awaiting_approval"
        EXPANDING = "expanding"
        TRAINING = "training"
        DONE = "done"
        FAILED = "failed"

    number = models.PositiveIntegerField(unique=True)
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.EVALUATING, db_index=True
    )
    failure_reason = models.TextField(blank=True)
    auto_approve = models.BooleanField(default=False)
    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="rounds")
    trained_policy = models.ForeignKey(
        Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="rounds_trained"
    )
    training_run = models.ForeignKey(
        TrainingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="rounds"
    )
    config = models.JSONField(default=dict, blank=True)  # RoundConfig.stored(): see .settings
    seed = models.BigIntegerField(default=0)
    scores = models.JSONField(
        default=dict, blank=True, help_text="Per-category scores of this round"
    )
    current_job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    jobs = models.ManyToManyField(Job, blank=True, related_name="rounds")
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-number"]

    def __str__(self) -> str:
        return f"round {self.number}"

    @property
    def settings(self) -> RoundConfig:
        """The round's ``config`` read as its typed settings (read afresh on each access)."""
        from arena.round_config import RoundConfig

        return RoundConfig.from_stored(self.config)


class ArenaEvaluation(models.Model):
    round = models.ForeignKey(EvolutionRound, on_delete=models.CASCADE, related_name="evaluations")
    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="evaluations")
    environments = models.ManyToManyField(Environment, blank=True, related_name="evaluations")
    trajectories = models.ManyToManyField(Trajectory, blank=True, related_name="evaluations")
    results = models.JSONField(
        default=dict, blank=True, help_text="Scores per category, environment, kind, difficulty"
    )
    comparison = models.JSONField(
        default=dict, blank=True, help_text="Delta against the previous round"
    )
    task_count = models.PositiveIntegerField(default=0)
    success_rate = models.FloatField(default=0.0)
    mean_reward = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]


class DiagnosisReport(models.Model):
    round = models.ForeignKey(EvolutionRound, on_delete=models.CASCADE, related_name="diagnoses")
    evaluation = models.ForeignKey(
        ArenaEvaluation, null=True, blank=True, on_delete=models.SET_NULL, related_name="diagnoses"
    )
    distribution = models.JSONField(
        default=dict, blank=True, help_text="Error labels per environment and category"
    )
    weakest = models.JSONField(
        default=dict, blank=True, help_text="Weakest environments and capabilities"
    )
    analysis = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]


class FailureLabel(models.Model):
    """One error-taxonomy label on a failed trajectory, with its executable evidence."""

    trajectory = models.ForeignKey(
        Trajectory, on_delete=models.CASCADE, related_name="failure_labels"
    )
    report = models.ForeignKey(
        DiagnosisReport, null=True, blank=True, on_delete=models.CASCADE, related_name="labels"
    )
    label = models.CharField(max_length=32, db_index=True)
    evidence = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["trajectory", "label"]
        constraints = [
            models.UniqueConstraint(
                fields=["trajectory", "report", "label"], name="label_once_per_report"
            ),
        ]


class ExpansionProposal(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"
        APPLIED = "applied"
        FAILED = "failed"

    class Kind(models.TextChoices):
        MORE_TASKS = "more_tasks"
        COMPLEXIFY_DATABASE = "complexify_database"
        NEW_ENVIRONMENT = "new_environment"

    round = models.ForeignKey(EvolutionRound, on_delete=models.CASCADE, related_name="proposals")
    report = models.ForeignKey(
        DiagnosisReport, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    kind = models.CharField(max_length=24, choices=Kind.choices)
    environment = models.ForeignKey(
        Environment, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    params = models.JSONField(default=dict, blank=True)
    rationale = models.TextField(blank=True)
    evidence = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    review_note = models.TextField(blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    applied_job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    result = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["round", "id"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} proposal #{self.pk} ({self.status})"

    def save(self, *args, **kwargs) -> None:
        """Parameters are checked against their kind's class on every save (and stored in its
        canonical form), so the applier never meets a field it cannot act on."""
        from arena.proposal_params import params_for

        try:
            self.params = params_for(self.kind, self.params).model_dump()
        except ValueError as exc:
            raise ValidationError(str(exc)) from exc
        super().save(*args, **kwargs)

    @property
    def typed_params(self):
        from arena.proposal_params import params_for

        return params_for(self.kind, self.params)

    def review(self, user, approve: bool, note: str = "") -> None:
        if self.status != self.Status.PENDING:
            raise ValidationError(f"proposal #{self.pk} was already {self.status}")
        self.status = self.Status.APPROVED if approve else self.Status.REJECTED
        self.reviewer = user
        self.review_note = note
        self.reviewed_at = timezone.now()
        self.save(update_fields=["status", "reviewer", "review_note", "reviewed_at"])

    def ensure_applicable(self) -> None:
        if self.status != self.Status.APPROVED:
            raise ValidationError(
                f"proposal #{self.pk} is {self.status}; only approved proposals are applied"
            )
