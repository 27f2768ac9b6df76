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


@console_page
def task_detail(request, pk: int):
    task = get_object_or_404(Task.objects.select_related("environment"), pk=pk)
    trajectories = task.trajectories.select_related("policy").order_by("-created_at")[:50]
    hidden = hides_answers(request.user, task)
    metadata = public_metadata(task.metadata) if hidden else task.metadata
    context = {
        "task": task,
        "structure": task.difficulty_record,
        "answer_contract": task_contract(task).describe() if task.answer_contract else "",
        "answers_hidden": hidden,
        "hidden_note": HIDDEN_NOTE,
        "metadata_json": json.dumps(metadata, indent=2, ensure_ascii=False) if metadata else "",
        "trajectories": trajectories,
    }
    if not hidden:
        context.update(
            {
                "gold_chain": task.gold_chain if isinstance(task.gold_chain, list) else [],
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
