"""Verifiable tasks synthesized against an environment's real database."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from environments.models import Environment


class TaskQuerySet(models.QuerySet):
    def usable(self) -> TaskQuerySet:
        """Tasks training and arena sampling may pick: none a reviewer marked unclear, wrong
        gold or meaningless (a ``natural`` mark keeps a task). The one filter both use."""
        return self.exclude(reviews__mark__in=EXCLUDING_MARKS)

    def unreviewed(self) -> TaskQuerySet:
        """Tasks no reviewer has marked yet (the review queue's pool)."""
        return self.filter(reviews__isnull=True)


class Task(models.Model):
    """A task; the gold data of evaluation tasks (see ``answers_hidden``) is for reviewers."""

    class Kind(models.TextChoices):
        GRAPH = "graph"
        PROGRAMMATIC = "programmatic"

    class Split(models.TextChoices):
        TRAIN = "train"
        ARENA = "arena"
        HELDOUT = "heldout"

    class Tier(models.TextChoices):
        EXPLICIT = "explicit"
        GOAL = "goal"
        GOAL_HARD = "goal_hard"

    class Consistency(models.TextChoices):
        """What N rollouts of a policy made of the task (tasks.synthesis.consistency)."""

        UNMEASURED = "", "not measured"
        MIXED = "mixed", "some rollouts solve it"
        ALWAYS = "always", "every rollout solves it"
        NEVER = "never", "no rollout solves it"

    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="tasks")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    split = models.CharField(max_length=8, choices=Split.choices, default=Split.TRAIN)
    difficulty = models.PositiveSmallIntegerField(default=1)
    instruction = models.TextField()
    gold_chain = models.JSONField(
        default=list, blank=True, help_text="[{tool, arguments}] for graph tasks"
    )
    solution = models.TextField(blank=True, help_text="Python solve(call) for programmatic tasks")
    verification_script = models.TextField(blank=True)
    reference_answer = models.JSONField(null=True, blank=True)
    expected_state_hash = models.CharField(max_length=64, blank=True)
    expected_diff = models.JSONField(default=dict, blank=True)
    write_steps = models.PositiveSmallIntegerField(default=0)
    signature = models.CharField(max_length=64, help_text="Canonical signature for dedup")
    seed = models.BigIntegerField(default=0)
    round_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="Evolution round that made it"
    )
    metadata = models.JSONField(default=dict, blank=True)
    answer_contract = models.JSONField(
        default=dict, blank=True, help_text="tasks.answer_contract.AnswerContract: the answer shape"
    )
    audit = models.JSONField(
        default=dict, blank=True, help_text="tasks.audit.VerifierAudit: the verifier's own checks"
    )
    structure = models.JSONField(
        default=dict,
        blank=True,
        help_text="tasks.synthesis.difficulty.StructuralDifficulty: steps, dependent calls, "
        "depth, writes, branches, joins, distractors, tier, level",
    )
    tier = models.CharField(
        max_length=16, choices=Tier.choices, blank=True, help_text="Instruction tier"
    )
    pass_rate = models.FloatField(
        null=True, blank=True, help_text="Share of a policy's rollouts that solved the task"
    )
    consistency = models.CharField(
        max_length=8,
        choices=Consistency.choices,
        blank=True,
        default=Consistency.UNMEASURED,
        help_text="always / never: every rollout / no rollout solved it (no learning signal)",
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["environment", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["environment", "signature"], name="task_unique_signature_per_environment"
            ),
        ]
        indexes = [
            models.Index(fields=["environment", "split", "kind"]),
            models.Index(fields=["split", "round_number"]),
            models.Index(fields=["environment", "id"], name="task_environment_id"),
            models.Index(fields=["split", "consistency"], name="task_split_consistency"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} task #{self.pk} in {self.environment}"

    @property
    def answers_hidden(self) -> bool:
        """An evaluation task (arena or held-out): only reviewers and admins see its gold data.

        The role check lives in ``tasks.privacy``; this says only which tasks it applies to.
        """
        return self.split in EVALUATION_SPLITS

    @property
    def gold_length(self) -> int:
        return len(self.gold_chain) if self.gold_chain else 0

    @property
    def difficulty_record(self):
        """The stored structure as a ``StructuralDifficulty``."""
        from tasks.synthesis.difficulty import StructuralDifficulty

        return StructuralDifficulty.from_dict(self.structure or self.metadata.get("difficulty"))

    @property
    def uniform(self) -> bool:
        """Every rollout or none solved it: no learning signal (the training set can skip it)."""
        return self.consistency in UNIFORM_CONSISTENCY


EVALUATION_SPLITS = frozenset({Task.Split.ARENA.value, Task.Split.HELDOUT.value})
UNIFORM_CONSISTENCY = frozenset({Task.Consistency.ALWAYS.value, Task.Consistency.NEVER.value})


class TaskReview(models.Model):
    """A reviewer's mark on a task: one current mark per task and reviewer (re-marking updates).

    ``template`` and ``intent`` (``tasks.generator_labels``) are recorded with the mark so the
    marks can be counted per generator.
    """

    class Mark(models.TextChoices):
        NATURAL = "natural", "natural"
        UNCLEAR = "unclear", "unclear"
        WRONG_GOLD = "wrong_gold", "wrong gold"
        MEANINGLESS = "meaningless", "meaningless"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="task_reviews"
    )
    mark = models.CharField(max_length=16, choices=Mark.choices)
    note = models.TextField(blank=True, max_length=2000)
    template = models.CharField(max_length=120, blank=True, help_text="Synthesis template")
    intent = models.CharField(max_length=32, blank=True, help_text="What the task asks for")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["task", "reviewer"], name="task_review_one_per_reviewer"
            ),
        ]
        indexes = [models.Index(fields=["mark"], name="task_review_mark")]

    def __str__(self) -> str:
        return f"{self.get_mark_display()} on task #{self.task_id} by {self.reviewer}"


NOTE_MAX_CHARS = 2000
# Marks that take a task out of training and arena sampling.
EXCLUDING_MARKS = frozenset(
    {
        TaskReview.Mark.UNCLEAR.value,
        TaskReview.Mark.WRONG_GOLD.value,
        TaskReview.Mark.MEANINGLESS.value,
    }
)
