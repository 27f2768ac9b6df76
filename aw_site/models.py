"""The Job record every long-running piece of work writes to: one row per Celery job."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Job(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        RETRYING = "retrying"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    class Queue(models.TextChoices):
        DEFAULT = "default"
        SANDBOX = "sandbox"
        GPU = "gpu"

    FINISHED_STATES = (State.SUCCEEDED, State.FAILED)
    LOG_TAIL_CHARS = 8000

    kind = models.CharField(max_length=64, db_index=True)
    queue = models.CharField(max_length=16, choices=Queue.choices, default=Queue.DEFAULT)
    state = models.CharField(
        max_length=16, choices=State.choices, default=State.QUEUED, db_index=True
    )
    progress = models.FloatField(default=0.0)
    message = models.CharField(max_length=500, blank=True)
    log_tail = models.TextField(blank=True)
    error = models.TextField(blank=True)
    arguments = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    celery_task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(
        max_length=200, blank=True, help_text="Hostname of the worker running it"
    )
    attempts = models.PositiveIntegerField(default=0)
    target = models.CharField(
        max_length=200, blank=True, help_text="What the job works on, e.g. environment:12"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="jobs",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["state", "heartbeat_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__gte=0.0) & models.Q(progress__lte=1.0),
                name="job_progress_between_0_and_1",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.state})"

    @property
    def is_finished(self) -> bool:
        return self.state in self.FINISHED_STATES

    @property
    def duration_seconds(self) -> float | None:
        if not self.started_at:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()

    @property
    def progress_percent(self) -> int:
        return round(self.progress * 100)
