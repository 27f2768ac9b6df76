"""Reviewers' marks on synthesized tasks: the queue they mark from, the mark, and the tally.

A reviewer reads a task with its gold run and marks it natural, unclear, wrong gold or
meaningless. Any mark but natural takes the task out of training and arena sampling
(``Task.objects.usable()``). Marks are counted per synthesis template and intent
(``tasks.generator_labels``) so the generator that makes the worst tasks is visible.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count
from django.utils import timezone

from aw_site.roles import REVIEWER, has_role
from environments.models import Environment
from tasks.generator_labels import INTENT_WORDS, generator_labels
from tasks.models import NOTE_MAX_CHARS, Task, TaskReview

MARKS = tuple(TaskReview.Mark.values)
SAMPLE_SIZE = 20
SAMPLE_WINDOW = 5  # the sample is drawn from the newest SAMPLE_WINDOW x size unmarked tasks


def _draw_key(seed: int, task_id: int) -> str:
    """A task's place in the seeded draw: stable while other tasks are marked and leave."""
    return hashlib.sha256(f"review:{seed}:{task_id}".encode()).hexdigest()


def review_sample(
    environment: Environment | None = None, size: int = SAMPLE_SIZE, seed: int = 0
) -> list[Task]:
    """A seeded sample of the newest tasks no reviewer has marked, newest first, taken from
    each environment in turn (one environment when given).

    The draw ranks each task by a hash of the seed and its id, so marking a task removes it
    without reshuffling the rest: the next screen shows the next task of the same sample.
    """
    if size < 1:
        return []
    pool = Task.objects.unreviewed().select_related("environment").order_by("-created_at", "-id")
    if environment is not None:
        pool = pool.filter(environment=environment)
    newest = list(pool[: size * SAMPLE_WINDOW])
    drawn = sorted(newest, key=lambda task: _draw_key(seed, task.pk))[:size]
    chosen = {task.pk for task in drawn}
    by_environment: dict[int, list[Task]] = {}
    for task in newest:  # newest first within each environment
        if task.pk in chosen:
            by_environment.setdefault(task.environment_id, []).append(task)
    queues = list(by_environment.values())  # environments with the newest task first
    sample: list[Task] = []
    for position in range(max((len(q) for q in queues), default=0)):
        sample.extend(queue[position] for queue in queues if position < len(queue))
    return sample


def mark_task(task: Task, reviewer: Any, mark: str, note: str = "") -> TaskReview:
    """Record ``reviewer``'s mark on ``task`` (re-marking updates the reviewer's one mark).

    Raises PermissionDenied for a user without the reviewer role and ValidationError (in words)
    for a mark outside the four or a note over ``NOTE_MAX_CHARS`` characters.
    """
    if not has_role(reviewer, REVIEWER):
        raise PermissionDenied("marking a task needs the reviewer role")
    if mark not in MARKS:
        raise ValidationError(
            f"unknown mark {mark!r}: choose one of {', '.join(MARKS)}", code="invalid_mark"
        )
    note = (note or "").strip()
    if len(note) > NOTE_MAX_CHARS:
        raise ValidationError(
            f"the note has {len(note)} characters; at most {NOTE_MAX_CHARS} are kept",
            code="note_too_long",
        )
    labels = generator_labels(task)
    now = timezone.now()
    review, _ = TaskReview.objects.update_or_create(
        task=task,
        reviewer=reviewer,
        defaults={
            "mark": mark,
            "note": note,
            "template": labels.template,
            "intent": labels.intent,
            "updated_at": now,
        },
        create_defaults={
            "mark": mark,
            "note": note,
            "template": labels.template,
            "intent": labels.intent,
            "created_at": now,
            "updated_at": now,
        },
    )
    return review


@dataclass(frozen=True)
class MarkTally:
    """The marks one generator's tasks received; ``not_natural`` is the share of the others."""

    label: str
    words: str
    natural: int
    unclear: int
    wrong_gold: int
    meaningless: int
    total: int
    not_natural: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MarksSummary:
    """Marks counted per synthesis template and per intent, worst generator first."""

    marks: int
    tasks: int
    excluded_tasks: int
    by_template: list[MarkTally]
    by_intent: list[MarkTally]

    def to_dict(self) -> dict[str, Any]:
        return {
            "marks": self.marks,
            "tasks": self.tasks,
            "excluded_tasks": self.excluded_tasks,
            "by_template": [t.to_dict() for t in self.by_template],
            "by_intent": [t.to_dict() for t in self.by_intent],
        }


def _tallies(rows: list[dict[str, Any]], field: str, words: dict[str, str]) -> list[MarkTally]:
    counts: dict[str, Counter[str]] = {}
    for row in rows:
        counts.setdefault(row[field] or "unknown", Counter())[row["mark"]] += row["n"]
    tallies = []
    for label, marks in counts.items():
        total = sum(marks.values())
        tallies.append(
            MarkTally(
                label=label,
                words=words.get(label, label),
                natural=marks[TaskReview.Mark.NATURAL],
                unclear=marks[TaskReview.Mark.UNCLEAR],
                wrong_gold=marks[TaskReview.Mark.WRONG_GOLD],
                meaningless=marks[TaskReview.Mark.MEANINGLESS],
                total=total,
                not_natural=round((total - marks[TaskReview.Mark.NATURAL]) / total, 4),
            )
        )
    return sorted(tallies, key=lambda t: (-t.not_natural, -t.total, t.label))


def marks_summary(environment: Environment | None = None) -> MarksSummary:
    """Every reviewer's current marks counted per template and intent (of one environment when
    given), the generators with the largest share of unnatural marks first."""
    reviews = TaskReview.objects.all()
    if environment is not None:
        reviews = reviews.filter(task__environment=environment)
    by_template = list(reviews.values("template", "mark").annotate(n=Count("id")))
    by_intent = list(reviews.values("intent", "mark").annotate(n=Count("id")))
    tasks = Task.objects.filter(reviews__in=reviews).distinct()
    return MarksSummary(
        marks=sum(row["n"] for row in by_template),
        tasks=tasks.count(),
        excluded_tasks=tasks.exclude(pk__in=Task.objects.usable().values("pk")).count(),
        by_template=_tallies(by_template, "template", {}),
        by_intent=_tallies(by_intent, "intent", INTENT_WORDS),
    )
