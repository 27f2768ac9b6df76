"""Console: one task with its gold chain or solution and the trajectories recorded on it.

The gold data of an evaluation task (arena, held-out) is shown to reviewers and admins only;
a viewer sees a note in its place (``tasks.privacy.hides_answers``).
"""

from __future__ import annotations

import json

from django.shortcuts import get_object_or_404, render

from aw_site.console import console_page
from tasks.answer_contract import task_contract
from tasks.models import Task
from tasks.privacy import HIDDEN_NOTE, hides_answers, public_metadata


def gold_run_context(user, task: Task) -> dict:
    """What ``tasks/_gold_run.html`` renders: the gold chain, or a note where ``user`` may not
    see the gold data of this task (the task page and the review queue both show it)."""
    hidden = hides_answers(user, task)
    return {
        "answers_hidden": hidden,
        "hidden_note": HIDDEN_NOTE,
        "gold_chain": [] if hidden or not isinstance(task.gold_chain, list) else task.gold_chain,
    }


@console_page
def task_detail(request, pk: int):
    task = get_object_or_404(Task.objects.select_related("environment"), pk=pk)
    trajectories = task.trajectories.select_related("policy").order_by("-created_at")[:50]
    gold = gold_run_context(request.user, task)
    hidden = gold["answers_hidden"]
    metadata = public_metadata(task.metadata) if hidden else task.metadata
    context = {
        "task": task,
        "structure": task.difficulty_record,
        "answer_contract": task_contract(task).describe() if task.answer_contract else "",
        **gold,
        "metadata_json": json.dumps(metadata, indent=2, ensure_ascii=False) if metadata else "",
        "trajectories": trajectories,
    }
    if not hidden:
        context.update(
            {
                "reference_answer_json": json.dumps(
                    task.reference_answer, indent=2, ensure_ascii=False
                ),
                "expected_diff_json": json.dumps(task.expected_diff, indent=2, ensure_ascii=False)
                if task.expected_diff
                else "",
                "audit_checks": (task.audit or {}).get("checks", []),
                "audit_passed": (task.audit or {}).get("passed"),
            }
        )
    return render(request, "tasks/detail.html", context)
