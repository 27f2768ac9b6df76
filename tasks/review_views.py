"""Console: the task review queue (one task per screen beside its gold run, four marks, keys)
and the tally of marks per synthesis template and intent.

Anyone with the viewer role reads the queue and the tally; only reviewers and admins mark.
The gold run of an evaluation task stays hidden from viewers (``tasks.privacy``).
"""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from aw_site.console import console_action, console_page, whole_number
from environments.models import Environment
from tasks.answer_contract import task_contract
from tasks.generator_labels import generator_labels
from tasks.models import NOTE_MAX_CHARS, Task, TaskReview
from tasks.reviews import mark_task, marks_summary, review_sample
from tasks.views import gold_run_context

# The keys that choose each mark on the queue page (static/js/task_review.js reads data-key).
MARK_KEYS = {
    TaskReview.Mark.NATURAL: ("1", "n"),
    TaskReview.Mark.UNCLEAR: ("2", "u"),
    TaskReview.Mark.WRONG_GOLD: ("3", "w"),
    TaskReview.Mark.MEANINGLESS: ("4", "m"),
}


class TaskMarkForm(forms.Form):
    mark = forms.ChoiceField(choices=TaskReview.Mark.choices)
    note = forms.CharField(required=False, max_length=NOTE_MAX_CHARS, widget=forms.Textarea)


def _queue_scope(request) -> tuple[Environment | None, int]:
    """The environment (``?environment=<id>``; all when absent) and the sample's seed."""
    environment = None
    environment_id = whole_number(request.GET.get("environment") or request.POST.get("environment"))
    if environment_id is not None:
        environment = get_object_or_404(Environment, pk=environment_id)
    seed = whole_number(request.GET.get("seed") or request.POST.get("seed")) or 0
    return environment, seed


def queue_url(environment: Environment | None, seed: int) -> str:
    query: dict[str, int] = {"environment": environment.pk} if environment is not None else {}
    if seed:
        query["seed"] = seed
    return reverse("task-review") + (f"?{urlencode(query)}" if query else "")


@console_page
def task_review(request):
    environment, seed = _queue_scope(request)
    sample = review_sample(environment, seed=seed)
    task = sample[0] if sample else None
    context = {
        "environment": environment,
        "environments": Environment.objects.filter(tasks__reviews__isnull=True)
        .distinct()
        .order_by("name", "version"),
        "seed": seed,
        "sample_size": len(sample),
        "task": task,
        "marks": [(value, label, MARK_KEYS[value]) for value, label in TaskReview.Mark.choices],
        "note_max": NOTE_MAX_CHARS,
        "form": TaskMarkForm(),
    }
    if task is not None:
        labels = generator_labels(task)
        context.update(gold_run_context(request.user, task))
        context.update(
            {
                "answer_contract": task_contract(task).describe() if task.answer_contract else "",
                "template": labels.template,
                "intent": labels.intent_words,
            }
        )
    return render(request, "tasks/review.html", context)


@console_action()
def task_mark(request, pk: int):
    """Record the reviewer's mark and show the next task of the same sample."""
    task = get_object_or_404(Task.objects.select_related("environment"), pk=pk)
    environment, seed = _queue_scope(request)
    form = TaskMarkForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(
            f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()
        )
        messages.error(request, f"Task #{pk} was not marked: {problems}")
        return redirect(queue_url(environment, seed))
    try:
        review = mark_task(task, request.user, form.cleaned_data["mark"], form.cleaned_data["note"])
    except ValidationError as exc:
        messages.error(request, f"Task #{pk} was not marked: {'; '.join(exc.messages)}")
        return redirect(queue_url(environment, seed))
    outcome = (
        "it stays in training and arena sampling"
        if review.mark == TaskReview.Mark.NATURAL
        else "it leaves training and arena sampling"
    )
    messages.success(request, f"Task #{pk} marked {review.get_mark_display()}: {outcome}.")
    return redirect(queue_url(environment, seed))


@console_page
def task_review_summary(request):
    environment, _ = _queue_scope(request)
    summary = marks_summary(environment)
    return render(
        request,
        "tasks/review_summary.html",
        {"environment": environment, "summary": summary},
    )
