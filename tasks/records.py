"""Between synthesized TaskSpecs (plain Python) and Task rows."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F

from environments.models import Environment
from tasks.models import Task
from tasks.synthesis.difficulty import StructuralDifficulty
from tasks.synthesis.task_spec import TaskSpec


def difficulty_level(spec: TaskSpec) -> int:
    """One integer for filtering: the walk length (or solution call count), at least 1."""
    difficulty = spec.difficulty or {}
    for key in ("steps", "walk_length", "length"):
        value = difficulty.get(key)
        if isinstance(value, int | float):
            return max(1, int(value))
    return max(1, len(spec.gold_chain))


def write_step_count(spec: TaskSpec) -> int:
    difficulty = spec.difficulty or {}
    if isinstance(difficulty.get("writes"), int):
        return difficulty["writes"]
    return sum(1 for step in spec.gold_chain if step.get("kind") == "write")


def structure_of(spec: TaskSpec) -> dict[str, Any]:
    """The spec's ``StructuralDifficulty`` as stored on ``Task.structure``."""
    tier = (spec.metadata or {}).get("tier") or (spec.difficulty or {}).get("tier")
    difficulty = {"steps": len(spec.gold_chain), **(spec.difficulty or {})}
    if tier:
        difficulty["tier"] = tier
    return StructuralDifficulty.from_dict(difficulty).to_dict()


def spec_from_task(task: Task) -> TaskSpec:
    """The TaskSpec the reward and rollouts take, rebuilt from a stored task."""
    metadata = task.metadata or {}
    return TaskSpec(
        kind=task.kind,
        environment=task.environment.name,
        environment_version=task.environment.version,
        instruction=task.instruction,
        gold_chain=task.gold_chain or [],
        reference_answer=task.reference_answer,
        expected_state_hash=task.expected_state_hash or None,
        expected_diff=task.expected_diff or {},
        difficulty=task.structure or metadata.get("difficulty", {"level": task.difficulty}),
        seed=task.seed,
        tools=metadata.get("tools", []),
        solution=task.solution or None,
        verification=task.verification_script or None,
        signature=task.signature,
        metadata=metadata.get("extra", {}),
        answer_contract=task.answer_contract or {},
        audit=task.audit or {},
    )


@transaction.atomic
def record_tasks(
    environment: Environment,
    specs: list[TaskSpec],
    *,
    split: str | None = None,
    round_number: int | None = None,
    split_of: Any = None,
) -> list[Task]:
    """Store new tasks (skipping ones already stored by signature) and bump the env's count.

    ``split`` fixes the split; otherwise ``split_of(spec) -> str`` decides it.
    """
    known = set(
        Task.objects.filter(
            environment=environment, signature__in=[s.signature for s in specs]
        ).values_list("signature", flat=True)
    )
    rows = []
    for spec in specs:
        if spec.signature in known:
            continue
        known.add(spec.signature)
        rows.append(
            Task(
                environment=environment,
                kind=spec.kind,
                split=split or (split_of(spec) if split_of else Task.Split.TRAIN),
                difficulty=difficulty_level(spec),
                instruction=spec.instruction,
                gold_chain=spec.gold_chain,
                solution=spec.solution or "",
                verification_script=spec.verification or "",
                reference_answer=spec.reference_answer,
                expected_state_hash=spec.expected_state_hash or "",
                expected_diff=spec.expected_diff or {},
                write_steps=write_step_count(spec),
                signature=spec.signature,
                seed=spec.seed,
                round_number=round_number,
                answer_contract=spec.answer_contract or {},
                audit=spec.audit or {},
                structure=structure_of(spec),
                tier=structure_of(spec)["tier"] if (spec.metadata or {}).get("tier") else "",
                pass_rate=(spec.metadata or {}).get("pass_rate"),
                consistency=(spec.metadata or {}).get("consistency", ""),
                metadata={
                    "difficulty": spec.difficulty,
                    "tools": spec.tools,
                    "extra": spec.metadata,
                },
            )
        )
    with transaction.atomic():  # a worker killed here leaves both or neither
        created = Task.objects.bulk_create(rows)
        Environment.objects.filter(pk=environment.pk).update(
            task_count=F("task_count") + len(created)
        )
    return created
