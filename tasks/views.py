"""Console: one task with its gold chain or solution and the trajectories recorded on it."""

from __future__ import annotations

import json

from django.shortcuts import get_object_or_404, render

from aw_site.views import console_page
from tasks.models import Task


@console_page
def task_detail(request, pk: int):
    task = get_object_or_404(Task.objects.select_related("environment"), pk=pk)
    trajectories = task.trajectories.select_related("policy").order_by("-created_at")[:50]
    context = {
        "task": task,
        "gold_chain": task.gold_chain if isinstance(task.gold_chain, list) else [],
        "reference_answer_json": json.dumps(task.reference_answer, indent=2, ensure_ascii=False),
        "expected_diff_json": json.dumps(task.expected_diff, indent=2, ensure_ascii=False)
        if task.expected_diff
        else "",
        "metadata_json": json.dumps(task.metadata, indent=2, ensure_ascii=False)
        if task.metadata
        else "",
        "trajectories": trajectories,
    }
    return render(request, "tasks/detail.html", context)
