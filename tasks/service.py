"""Synthesizing tasks for a recorded environment and storing them (used by jobs and rounds)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from environments.models import Environment
from environments.package import load_package
from environments.runtime import SandboxPool
from tasks.audit import AuditSummary
from tasks.models import Task
from tasks.records import record_tasks
from tasks.splits import SplitPolicy, arena_round_tasks
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer
from tasks.synthesis.task_spec import TaskSpec

Progress = Callable[[float, str], None]


def _quiet(fraction: float, message: str = "") -> None:
    return None


@dataclass
class SynthesisBatch:
    """Tasks that passed synthesis and the verifier audit, and the audit's account."""

    specs: list[TaskSpec]
    audit: AuditSummary


def synthesize_specs(
    package: Any,
    pool: SandboxPool,
    *,
    kind: str,
    count: int,
    min_walk_length: int = 1,
    max_walk_length: int = 4,
    write_steps: int = 0,
    seed: int = 0,
    tier: str = "goal",
    progress: Progress = _quiet,
) -> SynthesisBatch:
    """Audited task specs; graph walk lengths spread evenly over [min, max]; ``tier`` is the
    instruction tier of graph tasks (explicit | goal | goal_hard)."""
    if kind == Task.Kind.PROGRAMMATIC:
        synthesizer = ProgrammaticTaskSynthesizer(package, pool)
        specs = synthesizer.synthesize(count, seed=seed)
        progress(1.0, f"{len(specs)} programmatic tasks")
        return SynthesisBatch(specs, synthesizer.auditor.summary)
    lengths = list(range(min_walk_length, max_walk_length + 1))
    specs: list[TaskSpec] = []
    with GraphTaskSynthesizer(package, pool, tier=tier) as synthesizer:
        for index, length in enumerate(lengths):
            share = count // len(lengths) + (1 if index < count % len(lengths) else 0)
            if share == 0:
                continue
            difficulty = Difficulty(
                steps=length,
                writes=min(write_steps, length),
                joins=1 if length >= 4 else 0,
                distractors=min(2 + length, 10),
            )
            specs.extend(synthesizer.synthesize(share, difficulty, seed=seed + 10_007 * index))
            audit = synthesizer.auditor.summary
            progress(
                (index + 1) / len(lengths),
                f"{len(specs)} graph tasks (walks up to {length} steps); "
                f"audit kept {audit.kept} of {audit.audited}",
            )
        return SynthesisBatch(specs, synthesizer.auditor.summary)


@transaction.atomic
def record_audit(environment: Environment, summary: AuditSummary) -> None:
    """Add a synthesis run's audit account to the environment's running totals."""
    locked = Environment.objects.select_for_update().get(pk=environment.pk)
    locked.task_audit = AuditSummary.from_dict(locked.task_audit).merge(summary).to_dict()
    locked.save(update_fields=["task_audit"])
    environment.task_audit = locked.task_audit


def synthesize_tasks(
    environment: Environment,
    *,
    kind: str = Task.Kind.GRAPH,
    count: int = 20,
    min_walk_length: int = 1,
    max_walk_length: int = 4,
    write_steps: int = 0,
    seed: int = 0,
    split: str | None = None,
    round_number: int | None = None,
    pool: SandboxPool | None = None,
    tier: str = "goal",
    progress: Progress = _quiet,
) -> list[Task]:
    """Synthesize and store tasks; without ``split`` each lands where its signature hashes."""
    package = load_package(environment.package_path)
    own_pool = pool is None
    pool = pool or SandboxPool(workers=1)
    try:
        batch = synthesize_specs(
            package,
            pool,
            kind=kind,
            count=count,
            min_walk_length=min_walk_length,
            max_walk_length=max_walk_length,
            write_steps=write_steps,
            seed=seed,
            tier=tier,
            progress=progress,
        )
    finally:
        if own_pool:
            pool.close()
    record_audit(environment, batch.audit)
    policy = SplitPolicy()
    return record_tasks(
        environment,
        batch.specs,
        split=split,
        round_number=round_number,
        split_of=lambda s: policy.split_of(s.signature),
    )


def fresh_arena_tasks(
    environment: Environment,
    round_number: int,
    count: int,
    pool: SandboxPool,
    base_seed: int = 0,
    tier: str = "goal",
) -> list[Task]:
    """Tasks no training run has seen: new seeds per round, arena split only, never reused.
    ``tier``: the instruction tier of the new tasks (a round's ``instruction_tier``)."""
    existing = list(
        Task.objects.filter(
            environment=environment, split=Task.Split.ARENA, round_number=round_number
        )
    )
    if len(existing) >= count:
        return existing[:count]
    package = load_package(environment.package_path)
    exclude = set(Task.objects.filter(environment=environment).values_list("signature", flat=True))
    synthesizer = GraphTaskSynthesizer(package, pool, tier=tier)
    plans = [
        Difficulty(steps=1, distractors=2),
        Difficulty(steps=2, distractors=3),
        Difficulty(steps=3, writes=1, distractors=3),
    ]
    try:
        round_tasks = arena_round_tasks(
            lambda seed: [
                task
                for plan_index, plan in enumerate(plans)
                for task in synthesizer.synthesize(
                    2, plan, seed=seed + plan_index * 7919, max_walks=12
                )
            ],
            round_number,
            count - len(existing),
            exclude=exclude,
            base_seed=base_seed,
            max_batches=40,  # goal-tier walks bind only single rows: small worlds need more
        )
    finally:
        synthesizer.close()
    record_audit(environment, synthesizer.auditor.summary)
    created = record_tasks(
        environment, round_tasks.tasks, split=Task.Split.ARENA, round_number=round_number
    )
    return existing + created
