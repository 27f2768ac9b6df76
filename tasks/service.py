"""Synthesizing tasks for a recorded environment and storing them (used by jobs and rounds)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from environments.models import Environment
from environments.package import load_package
from environments.runtime import SandboxPool
from tasks.audit import AuditSummary
from tasks.gold_tools import gold_tools
from tasks.models import Task
from tasks.records import record_tasks
from tasks.splits import SplitPolicy, arena_round_tasks
from tasks.synthesis.consistency import BatchSolver, ConsistencyReport, mark_consistency
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer, start_obstacles
from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer
from tasks.synthesis.task_spec import TaskSpec

Progress = Callable[[float, str], None]
# (policy id or None for the AW_POLICY_BASE_URL endpoint, package, pool) -> BatchSolver. The
# solver rolls a policy out, which is the training app's business: it registers the factory
# when it loads (training/apps.py), so tasks never imports training.
PolicySolverFactory = Callable[[int | None, Any, SandboxPool], BatchSolver]
_policy_solver_factory: PolicySolverFactory | None = None
# policy id -> whether such a policy exists (checked before a synthesis job is queued).
PolicyExists = Callable[[int], bool]
_policy_exists: PolicyExists | None = None
DEFAULT_ROLLOUTS = 4


def register_policy_solver(factory: PolicySolverFactory, exists: PolicyExists) -> None:
    """Training's way in: how to roll a policy out, and how to tell that a policy id is known."""
    global _policy_solver_factory, _policy_exists
    _policy_solver_factory = factory
    _policy_exists = exists


def policy_exists(policy_id: int) -> bool:
    """Whether the registered training app knows this policy (False without one)."""
    return _policy_exists is not None and _policy_exists(policy_id)


def consistency_settings(consistency: dict[str, Any] | bool | None) -> dict[str, Any] | None:
    """{"policy": id | None, "rollouts": N} when pass rates are to be measured, else None.

    Asked for explicitly (``{"policy": 3, "rollouts": 8}``; ``{"rollouts": 4}`` uses the
    AW_POLICY_BASE_URL endpoint), or by default wherever AW_POLICY_BASE_URL is configured;
    ``False`` (or 0 rollouts) turns it off."""
    if consistency is False:
        return None
    if consistency in (None, True):
        if consistency is None and not os.environ.get("AW_POLICY_BASE_URL"):
            return None
        consistency = {}
    rollouts = int(consistency.get("rollouts", DEFAULT_ROLLOUTS))
    if rollouts <= 0:
        return None
    policy = consistency.get("policy")
    if policy is None and not os.environ.get("AW_POLICY_BASE_URL"):
        raise ValueError("pass rates need a policy id or AW_POLICY_BASE_URL")
    return {"policy": int(policy) if policy is not None else None, "rollouts": rollouts}


def measure_consistency(
    specs: list[TaskSpec], package: Any, pool: SandboxPool, settings: dict[str, Any]
) -> ConsistencyReport:
    """Each spec's pass rate over ``settings["rollouts"]`` rollouts of the policy, marked on
    its metadata (``pass_rate``, ``consistency``, ``rollouts``, ``consistency_policy``)."""
    if _policy_solver_factory is None:
        raise RuntimeError("no policy solver registered (the training app is not installed)")
    solver = _policy_solver_factory(settings["policy"], package, pool)
    report = mark_consistency(specs, solver, settings["rollouts"])
    for spec in specs:
        spec.metadata["consistency_policy"] = settings["policy"] or "AW_POLICY_BASE_URL"
    return report


def _quiet(fraction: float, message: str = "") -> None:
    return None


@dataclass
class SynthesisBatch:
    """Tasks that passed synthesis and the verifier audit, the audit's account, and every
    other candidate dropped on the way, counted by reason in words."""

    specs: list[TaskSpec]
    audit: AuditSummary
    discarded: dict[str, int] = field(default_factory=dict)


@dataclass
class SynthesisAccount:
    """What a synthesis run kept and dropped: the audit's account (by check) and every other
    discard (walks, programs, target tools, storage) by reason; a job returns it."""

    audit: AuditSummary = field(default_factory=AuditSummary)
    discarded: Counter = field(default_factory=Counter)
    stored: int = 0

    def add(self, batch: SynthesisBatch) -> None:
        self.audit = self.audit.merge(batch.audit)
        self.discarded.update(batch.discarded)

    def drop(self, reason: str, count: int = 1) -> None:
        if count > 0:
            self.discarded[reason] += count

    def to_dict(self) -> dict[str, Any]:
        return {
            "stored": self.stored,
            "audit": self.audit.to_dict(),
            "discarded": dict(sorted(self.discarded.items())),
        }


def graph_discards(stats: Any, obstacles: str = "") -> dict[str, int]:
    """A graph synthesizer's drops before the audit, by reason (``GraphSynthesisStats``);
    ``obstacles``: why no walk could start, in words (``start_obstacles``)."""
    reasons = {
        "walk shorter than planned": stats.short,
        "same walk as a task found before": stats.duplicates,
        "refused by the dependency check": stats.dependency_rejected,
        "asks back a value the text already gives": getattr(stats, "asked_back", 0),
        f"walk could not start: {obstacles or 'no read tool to start from'}": stats.no_start,
    }
    return {reason: count for reason, count in reasons.items() if count}


def program_discards(synthesizer: ProgrammaticTaskSynthesizer) -> dict[str, int]:
    """A programmatic synthesizer's drops outside the audit (the audit counts its own)."""
    found = {
        f"program: {reason}": count
        for reason, count in synthesizer.dropped.items()
        if not reason.startswith("audit")
    }
    if not synthesizer.shapes:
        found["program: the environment has no parent -> children tools to loop over"] = 1
    return found


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
    """Audited task specs; graph walk lengths spread evenly over [min, max] (a plan longer than
    the graph allows keeps the longest dependent chain it finds, at least half the plan);
    ``tier`` is the instruction tier (explicit | goal | goal_hard)."""
    if kind == Task.Kind.PROGRAMMATIC:
        synthesizer = ProgrammaticTaskSynthesizer(package, pool, tier=tier)
        specs = synthesizer.synthesize(count, seed=seed)
        progress(1.0, f"{len(specs)} programmatic tasks")
        return SynthesisBatch(specs, synthesizer.auditor.summary, program_discards(synthesizer))
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
                branches=1 if write_steps and length >= 3 else 0,
                distractors=min(2 + length, 10),
                min_steps=max(min_walk_length, (length + 1) // 2),
            )
            specs.extend(synthesizer.synthesize(share, difficulty, seed=seed + 10_007 * index))
            audit = synthesizer.auditor.summary
            progress(
                (index + 1) / len(lengths),
                f"{len(specs)} graph tasks (walks up to {length} steps); "
                f"audit kept {audit.kept} of {audit.audited}",
            )
        # Plans longer than the graph allows, or fewer distinct reads than asked for: short
        # walks fill the batch, then short walks with one write (add, change, remove a row;
        # checked by the state they leave) where reads alone cannot.
        for round_index, writes in enumerate(dict.fromkeys((min(write_steps, 1), 1))):
            missing = count - len(specs)
            if missing <= 0 or not (synthesizer.stats.kept or writes):
                continue
            shortest = Difficulty(
                steps=min(2, max_walk_length),
                writes=writes,
                distractors=min(2 + min_walk_length, 10),
                min_steps=min_walk_length,
            )
            specs.extend(
                synthesizer.synthesize(
                    missing,
                    shortest,
                    seed=seed + 10_007 * (len(lengths) + round_index),
                    max_walks=missing * 16,
                )
            )
        obstacles = start_obstacles(synthesizer.view, synthesizer.graph.nodes)
        return SynthesisBatch(
            specs,
            synthesizer.auditor.summary,
            graph_discards(synthesizer.stats, obstacles if synthesizer.stats.no_start else ""),
        )


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
    consistency: dict[str, Any] | bool | None = None,
    progress: Progress = _quiet,
    tools: Sequence[str] = (),
    max_batches: int = 3,
    account: SynthesisAccount | None = None,
) -> list[Task]:
    """Synthesize and store tasks; without ``split`` each lands where its signature hashes.

    ``consistency`` (see ``consistency_settings``): measure each task's pass rate over N
    rollouts of a policy and mark the tasks every rollout or none solved.
    ``tools``: target tools; only tasks whose gold solution uses one of them are kept. Up to
    ``max_batches`` batches (new seeds) are drawn to find ``count`` tasks that pass the audit,
    its meaning checks included.
    ``account``: filled with what was kept and every discard by reason (the job's result)."""
    account = account if account is not None else SynthesisAccount()
    measuring = consistency_settings(consistency)
    package = load_package(environment.package_path)
    own_pool = pool is None
    pool = pool or SandboxPool(workers=1)
    wanted = set(tools)
    kept: dict[str, TaskSpec] = {}
    try:
        for attempt in range(max_batches):  # new seeds while fewer than `count` are kept
            batch = synthesize_specs(
                package,
                pool,
                kind=kind,
                count=count,
                min_walk_length=min_walk_length,
                max_walk_length=max_walk_length,
                write_steps=write_steps,
                seed=seed + 7_919 * attempt,
                tier=tier,
                progress=progress,
            )
            record_audit(environment, batch.audit)
            account.add(batch)
            for spec in batch.specs:
                if wanted and not wanted & set(gold_tools(spec)):
                    account.drop("uses none of the target tools")
                elif spec.signature in kept:
                    account.drop("found again in a later batch")
                else:
                    kept[spec.signature] = spec
            if len(kept) >= count:
                break
        specs = list(kept.values())[:count]
        account.drop("more than the count asked for", len(kept) - len(specs))
        if measuring and specs:
            progress(0.9, f"{measuring['rollouts']} rollouts of {len(specs)} tasks")
            report = measure_consistency(specs, package, pool, measuring)
            counts = report.counts()
            progress(
                0.99,
                f"pass rates measured: {counts['always']} always solved, "
                f"{counts['never']} never, {counts['mixed']} mixed",
            )
    finally:
        if own_pool:
            pool.close()
    policy = SplitPolicy()
    created = record_tasks(
        environment,
        specs,
        split=split,
        round_number=round_number,
        split_of=lambda s: policy.split_of(s.signature),
    )
    account.drop("already stored in this environment", len(specs) - len(created))
    account.stored = len(created)
    return created


ARENA_LENGTHS = (1, 2, 4, 8, 12, 16, 24, 32, 40)  # walk plans a round spreads its tasks over
ARENA_MAX_WALK_LENGTH = 12  # a round's longest dependent walk by default (40 on request)


def arena_plans(max_walk_length: int = ARENA_MAX_WALK_LENGTH) -> list[Difficulty]:
    """Walk plans from one step up to ``max_walk_length``: longer ones write, branch on a value
    found on the way and join; each keeps the longest dependent chain the graph allows, at
    least half its length."""
    lengths = sorted({n for n in ARENA_LENGTHS if n < max_walk_length} | {max_walk_length})
    return [
        Difficulty(
            steps=n,
            writes=0 if n < 3 else 1 if n < 8 else 2,
            branches=1 if n >= 4 else 0,
            joins=1 if n >= 6 else 0,
            distractors=min(2 + n // 2, 10),
            min_steps=max(1, n // 2),
        )
        for n in lengths
    ]


def _spread(plans: list, count: int) -> list[tuple[int, int]]:
    """(plan index, tasks) for ``count`` tasks over the plans: every plan when there are
    enough tasks, else evenly spaced ones that always include the longest."""
    if count <= 0 or not plans:
        return []
    if count == 1:
        picks = [len(plans) - 1]
    else:
        picks = [round(i * (len(plans) - 1) / (count - 1)) for i in range(count)]
    return sorted(Counter(picks).items())


def fresh_arena_tasks(
    environment: Environment,
    round_number: int,
    count: int,
    pool: SandboxPool,
    base_seed: int = 0,
    tier: str = "goal",
    max_walk_length: int = ARENA_MAX_WALK_LENGTH,
    programmatic_share: float = 0.25,
) -> list[Task]:
    """Tasks no training run has seen: new seeds per round, arena split only, never reused.

    ``tier``: the instruction tier of the new tasks (a round's ``instruction_tier``). Graph
    tasks spread over walk plans up to ``max_walk_length`` dependent calls (the round's
    ``max_walk_length``, 12 by default, up to 40); ``programmatic_share`` of the tasks are
    programmatic (the round's ``programmatic_share``), graph tasks where the environment has
    no parent -> children tools. Tasks a reviewer marked unclear, wrong gold or meaningless are
    left out (``Task.objects.usable``); their signatures stay excluded, so none comes back."""
    existing = list(  # a task a reviewer marked (unclear, ...) is replaced by a fresh one
        Task.objects.usable().filter(
            environment=environment, split=Task.Split.ARENA, round_number=round_number
        )
    )
    if len(existing) >= count:
        return existing[:count]
    package = load_package(environment.package_path)
    exclude = set(Task.objects.filter(environment=environment).values_list("signature", flat=True))
    have = Counter(t.kind for t in existing)
    wanted_programs = max(0, round(count * programmatic_share) - have[Task.Kind.PROGRAMMATIC])
    wanted_programs = min(wanted_programs, count - len(existing))
    specs: list[TaskSpec] = []
    if wanted_programs:
        programs = ProgrammaticTaskSynthesizer(package, pool, tier=tier)
        if programs.shapes:
            found = arena_round_tasks(
                lambda seed: [  # a program's calls an agent makes one by one, 40 at most
                    t for t in programs.synthesize(2, seed=seed) if len(t.gold_chain) <= 40
                ],
                round_number,
                wanted_programs,
                exclude=exclude,
                base_seed=base_seed + 1,
                max_batches=12,
                give_up_after=2,
            )
            specs += found.tasks
            exclude |= {t.signature for t in found.tasks}
        record_audit(environment, programs.auditor.summary)
    wanted_graphs = count - len(existing) - len(specs)
    synthesizer = GraphTaskSynthesizer(package, pool, tier=tier)
    plans = arena_plans(max_walk_length)
    try:
        for index, share in _spread(plans, wanted_graphs):
            plan = plans[index]
            found = arena_round_tasks(
                lambda seed, plan=plan: synthesizer.synthesize(2, plan, seed=seed, max_walks=8),
                round_number,
                share,
                exclude=exclude,
                base_seed=base_seed + 7919 * (index + 2),
                max_batches=40 if plan.steps <= 4 else 20,
                give_up_after=2,  # a walk this world does not allow: shorter plans fill in
            )
            specs += found.tasks
            exclude |= {t.signature for t in found.tasks}
        short = count - len(existing) - len(specs)
        if short > 0:  # long walks this world does not allow: short ones fill the round
            found = arena_round_tasks(
                lambda seed: [
                    task
                    for plan_index, plan in enumerate(plans[:3])
                    for task in synthesizer.synthesize(
                        2, plan, seed=seed + plan_index * 7919, max_walks=12
                    )
                ],
                round_number,
                short,
                exclude=exclude,
                base_seed=base_seed,
                max_batches=40,  # goal-tier walks bind only real data flow: small worlds need more
            )
            specs += found.tasks
    finally:
        synthesizer.close()
    record_audit(environment, synthesizer.auditor.summary)
    created = record_tasks(environment, specs, split=Task.Split.ARENA, round_number=round_number)
    return existing + created
