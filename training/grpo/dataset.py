"""The GRPO training set: one row per task, mixed across environments and categories.

Each row carries the prompt exactly as the agent view renders it (``tasks.agent_view``: system
prompt listing the task's offered tools, then the instruction); ``training.grpo.rollouts``
finds the task again from that prompt. ``task_id`` and ``category`` are for inspection.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

from tasks.agent_view import agent_view
from training.rollout.agent_loop import task_fields


def category_of(manifest: dict[str, Any]) -> str:
    category = manifest.get("category") or {}
    if isinstance(category, dict):
        return str(category.get("primary") or "uncategorised")
    return str(category)


def mix_tasks(tasks: list[Any], manifests: dict[str, dict[str, Any]], seed: int = 0) -> list[Any]:
    """Interleave tasks so consecutive rows cycle categories, and environments within them."""
    rng = random.Random(seed)
    by_category: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for task in tasks:
        environment = task_fields(task)[1]
        by_category[category_of(manifests[environment])][environment].append(task)
    queues = []
    for category in sorted(by_category):
        environments = by_category[category]
        for queue in environments.values():
            rng.shuffle(queue)
        # Within a category, round-robin its environments.
        merged = []
        names = sorted(environments)
        while any(environments[n] for n in names):
            for name in names:
                if environments[name]:
                    merged.append(environments[name].pop())
        queues.append(merged)
    mixed = []
    while any(queues):
        for queue in queues:
            if queue:
                mixed.append(queue.pop(0))
    return mixed


def build_rows(tasks: list[Any], manifests: dict[str, dict[str, Any]], seed: int = 0) -> list[dict]:
    rows = []
    for task in mix_tasks(tasks, manifests, seed):
        task_id, environment, instruction = task_fields(task)
        manifest = manifests[environment]
        rows.append(
            {
                "prompt": agent_view(task, manifest, instruction).messages(),
                "environment_name": environment,
                "task_id": task_id,
                "category": category_of(manifest),
            }
        )
    return rows


def build_dataset(tasks: list[Any], manifests: dict[str, dict[str, Any]], seed: int = 0) -> Any:
    """A ``datasets.Dataset`` of the mixed rows."""
    from datasets import Dataset

    return Dataset.from_list(build_rows(tasks, manifests, seed))
