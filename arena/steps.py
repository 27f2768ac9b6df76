"""The steps of an evolution round, each idempotent so a retried job resumes where it stopped.

evaluate: fresh arena tasks in a stratified sample of environments, the policy's rollouts,
          the shared reward, a scoreboard compared with the previous round.
diagnose: error-taxonomy labels on every failure, the weakest environments and capabilities,
          expansion proposals with their evidence.
expand:   apply the approved proposals (more tasks, a complexified database, a new environment).
train:    a training run of the round's policy; its output is the next round's policy.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from django.db import transaction
from django.utils import timezone

from arena.diagnosis import EvaluatedEpisode, FailureDiagnosis
from arena.diagnosis import diagnose as diagnose_episodes
from arena.lineage import is_calibration_round, previous_evaluation
from arena.models import (
    ArenaEvaluation,
    DiagnosisReport,
    EvolutionRound,
    ExpansionProposal,
    FailureLabel,
)
from arena.proposal_params import MoreTasksParams
from arena.proposals import propose_expansions
from arena.rejections import rejected_environments
from arena.sampling import sample_environments
from arena.scoreboard import Scoreboard, build_scoreboard, compare
from aw_site.jobs import JobContext, interrupted
from environments.models import Category, Environment, Theme
from environments.runtime import SandboxPool
from environments.versions import current_version, current_versions
from tasks.models import Task
from tasks.records import spec_from_task
from tasks.reward_breakdown import RewardBreakdown
from tasks.service import fresh_arena_tasks, synthesize_tasks
from training.models import TrainingRun, TrainingTask
from training.service import evaluate_tasks, record_trajectory
from training.service import train as train_policy


def round_evaluation(evolution_round: EvolutionRound) -> ArenaEvaluation:
    evaluation = evolution_round.evaluations.filter(policy=evolution_round.policy).first()
    return evaluation or ArenaEvaluation.objects.create(
        round=evolution_round, policy=evolution_round.policy
    )


def sampled_environments(evolution_round: EvolutionRound) -> list[Environment]:
    verified = current_versions(
        Environment.objects.filter(status=Environment.Status.VERIFIED).select_related("category")
    )
    candidates = [
        {"name": env.name, "category": env.manifest.get("category", {}), "record": env}
        for env in verified
    ]
    if not candidates:
        raise ValueError("no verified environments to evaluate in; build the catalogue first")
    per_category = evolution_round.settings.environments_per_category
    return [
        pick["record"]
        for pick in sample_environments(
            candidates, per_category=per_category, seed=evolution_round.seed
        )
    ]


def evaluate(evolution_round: EvolutionRound, ctx: JobContext) -> dict[str, Any]:
    evaluation = round_evaluation(evolution_round)
    environments = sampled_environments(evolution_round)
    evaluation.environments.set(environments)
    settings = evolution_round.settings
    done_task_ids = set(evaluation.trajectories.values_list("task_id", flat=True))
    with SandboxPool(workers=2) as pool:
        tasks = []
        for index, environment in enumerate(environments):
            tasks.extend(
                fresh_arena_tasks(
                    environment,
                    evolution_round.number,
                    settings.tasks_per_environment,
                    pool,
                    base_seed=evolution_round.seed,
                    tier=settings.instruction_tier,
                    max_walk_length=settings.max_walk_length,
                    programmatic_share=settings.programmatic_share,
                )
            )
            ctx.progress(
                0.25 * (index + 1) / len(environments), f"fresh tasks in {environment.label}"
            )
        pending = [task for task in tasks if task.pk not in done_task_ids]
        ctx.log(
            f"{len(tasks)} arena tasks in {len(environments)} environments; {len(pending)} still to run"
        )
        batch = 8
        for start in range(0, len(pending), batch):
            chunk = pending[start : start + batch]
            for task, trajectory in evaluate_tasks(evolution_round.policy, chunk, pool):
                with transaction.atomic():
                    evaluation.trajectories.add(
                        record_trajectory(trajectory, task, evolution_round.policy)
                    )
            done = len(tasks) - len(pending) + start + len(chunk)
            ctx.progress(
                0.25 + 0.7 * done / max(1, len(tasks)), f"{done} of {len(tasks)} episodes scored"
            )
    episodes = evaluated_episodes(evaluation)
    board = build_scoreboard(episodes)
    previous = previous_evaluation(evolution_round)
    results = board.to_dict()
    evaluation.results = results
    before = Scoreboard.from_dict(previous.results) if previous else None
    evaluation.comparison = {
        **compare(board, before),
        "task_kind": compare(board, before, "task_kind")["task_kind"],
    }
    evaluation.task_count = board.overall.episodes
    evaluation.success_rate = board.overall.success_rate
    evaluation.mean_reward = board.overall.mean_reward
    evaluation.save()
    # A round's score per category is its success rate (the gated reward's partial credit
    # stays in the evaluation's results, next to each rate's interval).
    evolution_round.scores = {
        name: cell["success_rate"] for name, cell in results.get("category", {}).items()
    }
    evolution_round.save(update_fields=["scores"])
    return {
        "episodes": evaluation.task_count,
        "success_rate": evaluation.success_rate,
        "mean_reward": evaluation.mean_reward,
    }


def evaluated_episodes(evaluation: ArenaEvaluation) -> list[EvaluatedEpisode]:
    """The evaluation's stored episodes as diagnosis reads them: each row as a trajectory
    record, its task as a spec and its stored reward as a breakdown."""
    trajectories = evaluation.trajectories.select_related(
        "task__environment", "environment"
    ).prefetch_related("steps")
    episodes = []
    for row in trajectories:
        spec = spec_from_task(row.task)
        manifest = row.task.environment.manifest
        record = row.to_record()  # reads the stored reward too
        episodes.append(
            EvaluatedEpisode(
                trajectory=record,
                task=dataclasses.replace(spec, difficulty=row.task.difficulty),
                reward=record.reward or RewardBreakdown.unscored(),
                environment=row.task.environment.name,
                category=manifest.get("category", {}),
                tool_kinds=manifest.get("tool_kinds", {}),
                trajectory_id=row.pk,
            )
        )
    return episodes


def episodes_by_label(failures: list[FailureDiagnosis]) -> dict[str, int]:
    """How many failed episodes carry each label (once per episode, however often labelled)."""
    counts: Counter[str] = Counter(kind for failure in failures for kind in set(failure.kinds))
    return dict(counts)


def diagnose(evolution_round: EvolutionRound, ctx: JobContext) -> dict[str, Any]:
    evaluation = round_evaluation(evolution_round)
    episodes = evaluated_episodes(evaluation)
    summary = diagnose_episodes(episodes, seed=evolution_round.seed)
    ctx.progress(0.6, f"{summary.failure_count} failures labelled in {summary.episodes} episodes")
    trajectory_of_task = {str(t.task_id): t for t in evaluation.trajectories.all()}
    data = summary.to_dict()
    with transaction.atomic():
        evolution_round.diagnoses.all().delete()  # a retried step rebuilds its report
        report = DiagnosisReport.objects.create(
            round=evolution_round,
            evaluation=evaluation,
            distribution={
                "by_label": data["label_counts"],
                # A failed episode can carry several labels: the round page gives each label's
                # share of labels and how many failed episodes had it, out of how many.
                "episodes_by_label": episodes_by_label(summary.failures),
                "failed_episodes": data["failure_count"],
                "episodes": data["episodes"],
                "by_environment": data["by_environment"],
                "by_category": data["by_category"],
            },
            weakest={
                "environments": data["weakest_environments"],
                "categories": data["weakest_categories"],
                "capabilities": data["weakest_capabilities"],
                "environment_scores": data["environment_scores"],
                "category_scores": data["category_scores"],
                "capability_scores": data["capability_scores"],
            },
            analysis=summary.analysis,
        )
        labels = []
        for failure in summary.failures:
            trajectory = trajectory_of_task.get(failure.task_id)
            if trajectory is None:
                continue
            for label in failure.labels:
                labels.append(
                    FailureLabel(
                        trajectory=trajectory,
                        report=report,
                        label=label.kind,
                        evidence=label.to_dict(),
                    )
                )
        FailureLabel.objects.bulk_create(labels, ignore_conflicts=True)
        evolution_round.proposals.filter(status=ExpansionProposal.Status.PENDING).delete()
        environments = {env.name: env for env in evaluation.environments.all()}
        # A calibration round's failures were injected on purpose: they say nothing about what
        # the environments lack, so nothing is proposed (the calibration page reads the labels).
        calibrating = is_calibration_round(evolution_round)
        for proposal in [] if calibrating else propose_expansions(summary):
            ExpansionProposal.objects.create(
                round=evolution_round,
                report=report,
                kind=proposal.kind,
                environment=environments.get(proposal.environment or ""),
                category=category_row(proposal.category),
                params=proposal.params,
                rationale=proposal.rationale,
                evidence=proposal.evidence,
            )
    return {"failures": summary.failure_count, "proposals": evolution_round.proposals.count()}


def category_row(category: Any) -> Category | None:
    if isinstance(category, dict) and category.get("primary"):
        return Category.ensure_path(category["primary"], category.get("secondary"))
    if isinstance(category, str) and category:
        primary, _, secondary = category.partition(" / ")
        return Category.ensure_path(primary, secondary or None)
    return None


class ExpansionsFailed(RuntimeError):
    """Every approved expansion of a round failed: the round ends failed, with the reasons."""


# New versions and environments first, so task proposals of the same round land on them.
APPLY_ORDER = (
    ExpansionProposal.Kind.COMPLEXIFY_DATABASE,
    ExpansionProposal.Kind.NEW_ENVIRONMENT,
    ExpansionProposal.Kind.MORE_TASKS,
)


def expand(evolution_round: EvolutionRound, ctx: JobContext) -> dict[str, Any]:
    approved = sorted(
        evolution_round.proposals.filter(status=ExpansionProposal.Status.APPROVED),
        key=lambda p: (
            APPLY_ORDER.index(p.kind) if p.kind in APPLY_ORDER else len(APPLY_ORDER),
            p.pk,
        ),
    )
    # A retried step: proposals an earlier attempt applied count, and are not applied again.
    earlier = evolution_round.proposals.filter(status=ExpansionProposal.Status.APPLIED).count()
    applied = 0
    reasons = []
    for index, proposal in enumerate(approved):
        try:
            proposal.result = apply_proposal(proposal, ctx)
            proposal.status = ExpansionProposal.Status.APPLIED
            applied += 1
        except Exception as exc:  # one failed expansion is recorded, the others still apply
            if interrupted(exc):
                raise  # the retried job applies this proposal again
            proposal.result = {"error": f"{type(exc).__name__}: {exc}"}
            proposal.status = ExpansionProposal.Status.FAILED
            reasons.append(f"#{proposal.pk} {proposal.kind}: {proposal.result['error']}")
        proposal.applied_job = ctx.job
        proposal.save(update_fields=["result", "status", "applied_job"])
        ctx.progress((index + 1) / len(approved), f"proposal {proposal.pk}: {proposal.status}")
    if approved and not applied and not earlier:
        raise ExpansionsFailed("every approved expansion failed: " + "; ".join(reasons))
    return {"applied": applied + earlier, "failed": len(approved) - applied}


def apply_proposal(proposal: ExpansionProposal, ctx: JobContext) -> dict[str, Any]:
    """Carry out one approved expansion (refuses anything not approved) and say exactly what
    changed: the environment version it acted on or created, rows added per table, the ids of
    the tasks it created. Every typed parameter has an effect (``arena.proposal_params``)."""
    proposal.ensure_applicable()
    params = proposal.typed_params
    seed = proposal.round.seed + proposal.pk
    if proposal.kind == ExpansionProposal.Kind.MORE_TASKS:
        environment = current_version(proposal.environment)
        created = _tasks_for(proposal, environment, params, seed)
        return {"environment": environment.pk, "version": environment.version, **created}
    if proposal.kind == ExpansionProposal.Kind.COMPLEXIFY_DATABASE:
        from environments.jobs import complexify_environment

        base = current_version(proposal.environment)
        tables = tables_of_tools(base, params.tools)  # refuses unknown tools before building
        changed = complexify_environment(
            ctx,
            base.pk,
            rounds=params.rounds,
            rows_per_table=params.rows_per_table,
            seed=seed,
            tables=tables or None,
        )
        environment = Environment.objects.get(pk=changed["environment"])
        task_params = MoreTasksParams(
            count=max(1, params.tasks), tier=params.tier, tools=params.tools, focus=params.focus
        )
        try:
            created = _tasks_for(proposal, environment, task_params, seed) if params.tasks else {}
        except Exception:
            # The expansion failed: its new version must not supersede the parent it grew from.
            if environment.pk != base.pk and environment.status == Environment.Status.VERIFIED:
                environment.transition(Environment.Status.RETIRED)
            raise
        return {**changed, "tables": tables, **created}
    if proposal.kind == ExpansionProposal.Kind.NEW_ENVIRONMENT:
        return _new_environments(proposal, params, ctx, seed)
    raise ValueError(f"unknown proposal kind {proposal.kind}")


def _new_environments(proposal: ExpansionProposal, params: Any, ctx: JobContext, seed: int):
    """Build up to ``count`` environments in the weak category, each with its tasks; the first
    failure after one success ends the series (what was built is kept and recorded)."""
    built_ids: list[int] = []
    tasks: list[int] = []
    builds: list[dict[str, Any]] = []
    for index in range(params.count):
        try:
            built = build_in_category(proposal, params, ctx)
            environment = Environment.objects.filter(pk=built.get("environment")).first()
            if environment is None or environment.status != Environment.Status.VERIFIED:
                raise ValueError(f"the new environment did not verify: {built}")
        except ValueError as exc:
            if not built_ids:
                raise
            builds.append({"error": str(exc)})
            break
        task_params = MoreTasksParams(count=max(1, params.tasks), tier=params.tier)
        created = (
            _tasks_for(proposal, environment, task_params, seed + index) if params.tasks else {}
        )
        built_ids.append(environment.pk)
        tasks += created.get("tasks", [])
        builds.append({**built, "name": environment.name, "version": environment.version})
    first = Environment.objects.get(pk=built_ids[0])
    return {
        "environment": first.pk,
        "name": first.name,
        "version": first.version,
        "environments": built_ids,
        "builds": builds,
        "tasks": tasks,
        "tasks_created": len(tasks),
    }


def _fallback_lengths(asked: int) -> list[int]:
    """Shortest walk lengths to try in turn: the asked one, one less, then halves down to 1."""
    lengths, half = [asked, asked - 1], asked
    while half > 1:
        half //= 2
        lengths.append(half)
    return list(dict.fromkeys(n for n in lengths if n >= 1))


def _tasks_for(
    proposal: ExpansionProposal, environment: Environment, params: MoreTasksParams, seed: int
) -> dict[str, Any]:
    """Synthesize a proposal's training tasks; refuses to call an expansion with none a success.

    When the environment's graph cannot walk the asked length, the shortest length steps down:
    one less first (a planning proposal asks one more than the failed chain, so that is the
    failure's own length), then halves until tasks come (the result says which length held)."""
    for shortest in _fallback_lengths(params.min_walk_length):
        created = synthesize_tasks(
            environment,
            kind=params.task_kind,
            count=params.count,
            min_walk_length=shortest,
            max_walk_length=max(shortest, params.longest),
            write_steps=min(params.write_steps, params.longest),
            seed=seed,
            split="train",
            round_number=proposal.round.number,
            tier=params.tier,
            tools=params.tools,
        )
        if created or params.task_kind != "graph":
            break
    if not created:
        wanted = f" using {', '.join(params.tools)}" if params.tools else ""
        raise ValueError(
            f"no {params.task_kind} task{wanted} could be synthesized in {environment}"
        )
    return {
        "tasks": [task.pk for task in created],
        "tasks_created": len(created),
        "min_walk_length_reached": shortest,
    }


def tables_of_tools(environment: Environment, tools: list[str]) -> list[str]:
    """The tables the named tools read or write (their entity and its parent). A name that is
    no tool of the environment is refused: it would match no table, and an empty list means
    "every table" to complexify."""
    if not tools:
        return []
    from tasks.synthesis.tool_graph import build_tool_graph

    graph = build_tool_graph(environment.package_path)
    unknown = sorted(set(tools) - set(graph.nodes))
    if unknown:
        raise ValueError(f"{environment} has no tool {', '.join(unknown)}")
    tables = set()
    for name in tools:
        node = graph.nodes[name]
        tables.update(t for t in (node.entity, node.parent) if t)
    return sorted(tables)


def _secondary_name(category: Category | None) -> str | None:
    """The second level of a category path (None for a primary category)."""
    node, chain = category, []
    while node is not None:
        chain.append(node)
        node = node.parent
    return chain[-2].name if len(chain) >= 2 else None


def theme_in_category(category: Category | None, theme_id: int | None) -> Theme | None:
    """The theme a new-environment proposal builds: the one it names (which must exist), else
    an imported theme not built yet in the weak subcategory, else in its primary category."""
    from environments.models import Theme

    if theme_id is not None:
        theme = Theme.objects.filter(pk=theme_id).first()
        if theme is None:
            raise ValueError(f"theme {theme_id} does not exist (GET /api/themes/ lists them)")
        return theme
    if category is None:
        return None
    primary, secondary = category.primary(), _secondary_name(category)
    unbuilt = Theme.objects.filter(duplicate_of__isnull=True, environments__isnull=True)
    candidates = [
        t
        for t in unbuilt.select_related("category").order_by("id")
        if t.category is not None and t.category.primary() == primary
    ]
    same_secondary = [t for t in candidates if _secondary_name(t.category) == secondary]
    return (same_secondary or candidates or [None])[0]


def build_in_category(proposal: ExpansionProposal, params: Any, ctx: JobContext) -> dict[str, Any]:
    """Build a new environment in the weak category: from an imported theme there (the one the
    proposal names, else the first not built yet, its subcategory first), else an unbuilt
    offline data source there (its subcategory first); with an LLM configured the theme build
    runs the research and tool-design agents."""
    from environments.builder import submit
    from environments.builder.request import BuildRequest, builtin_sources
    from environments.jobs import run_build

    category = proposal.category
    theme = theme_in_category(category, params.theme)
    if theme is not None:
        return run_build(ctx, submit.theme_request(theme.pk), fail_on_reject=False)
    wanted = category.primary().name if category else None
    secondary = _secondary_name(category)
    # A draft or rejected build (an interrupted or failed earlier try) does not use a source up.
    taken = Environment.objects.exclude(
        status__in=[Environment.Status.DRAFT, Environment.Status.REJECTED]
    )
    built = set(taken.values_list("name", flat=True)) | set(params.exclude)
    sources = [
        spec
        for spec in builtin_sources()
        if spec["category"]["primary"] == wanted and spec["name"] not in built
    ]
    sources.sort(key=lambda spec: spec["category"].get("secondary") != secondary)
    if sources:
        return run_build(ctx, BuildRequest.for_source(sources[0]["name"]), fail_on_reject=False)
    raise ValueError(
        f"no theme and no unbuilt offline data source in {wanted or 'that category'}: import a "
        "theme there (POST /api/themes/import/) and it becomes the new environment"
    )


def round_training_set(evolution_round: EvolutionRound, run: TrainingRun) -> list[TrainingTask]:
    """What the round trains on: the tasks its applied expansions created, plus a replay sample
    of earlier training tasks (``replay_ratio`` per new task, default 1), all from current
    environment versions. An environment whose every proposal of the round was rejected is not
    replayed (``arena.rejections``). A round without expansion tasks replays
    ``tasks_per_environment`` tasks of each evaluated environment; a round whose training options set
    ``tasks_per_environment`` keeps at most that many expansion tasks per environment, taken
    from its proposals in turns (a CPU budget; unset, every expansion task trains). Tasks a
    reviewer marked unclear, wrong gold or meaningless never train (``Task.objects.usable``)."""
    import random

    settings = evolution_round.settings
    ratio = settings.replay_ratio
    per_environment = settings.training.tasks_per_environment
    cap = per_environment if settings.training_sets("tasks_per_environment") else None
    queues: list[list[TrainingTask]] = []
    new_ids: set[int] = set()
    for proposal in evolution_round.proposals.filter(status=ExpansionProposal.Status.APPLIED):
        ids = [i for i in (proposal.result or {}).get("tasks", []) if i not in new_ids]
        current = (
            Task.objects.usable()
            .filter(pk__in=ids, split=Task.Split.TRAIN)
            .select_related("environment")
        )
        queue = []
        for task in current.order_by("id"):
            if task.environment == current_version(task.environment):  # not superseded since
                new_ids.add(task.pk)
                queue.append(
                    TrainingTask(
                        run=run,
                        task=task,
                        source=TrainingTask.Source.EXPANSION,
                        proposal=proposal.pk,
                    )
                )
        queues.append(queue)
    links = _in_turns(queues, cap)  # left-over expansion tasks are not replayed either
    environments = {
        current_version(e) for e in round_evaluation(evolution_round).environments.all()
    }
    environments |= {link.task.environment for link in links}
    rejected = rejected_environments(evolution_round)
    environments = {e for e in environments if e.name not in rejected}
    pool = list(
        Task.objects.usable()
        .filter(environment__in=environments, split=Task.Split.TRAIN)
        .exclude(pk__in=new_ids)
        .select_related("environment")
        .order_by("id")
    )
    wanted = round(ratio * len(links)) if links else per_environment * len(environments)
    rng = random.Random(evolution_round.seed)
    replay = rng.sample(pool, min(wanted, len(pool)))
    links += [TrainingTask(run=run, task=t, source=TrainingTask.Source.REPLAY) for t in replay]
    return links  # empty: the run falls back to its environments' train split, or fails there


def _in_turns(queues: list[list[TrainingTask]], cap: int | None) -> list[TrainingTask]:
    """One task from each proposal's queue in turn, at most ``cap`` per environment."""
    taken: list[TrainingTask] = []
    per_environment: dict[int, int] = {}
    for position in range(max((len(q) for q in queues), default=0)):
        for queue in queues:
            if position < len(queue):
                link = queue[position]
                count = per_environment.get(link.task.environment_id, 0)
                if cap is None or count < cap:
                    per_environment[link.task.environment_id] = count + 1
                    taken.append(link)
    return taken


def replay_note(evolution_round: EvolutionRound, links: list[TrainingTask]) -> str:
    """One log line: the training set's make-up, and a replay share short of the configured
    ratio (fewer earlier training tasks exist than it asks for)."""
    replayed = sum(1 for link in links if link.source == TrainingTask.Source.REPLAY)
    created = len(links) - replayed
    ratio = evolution_round.settings.replay_ratio
    note = f"training set: {created} task(s) from expansions, {replayed} replayed"
    wanted = round(ratio * created)
    if created and replayed < wanted:
        note += f" (replay_ratio {ratio:g} asks for {wanted}; only {replayed} earlier exist)"
    return note


def train(evolution_round: EvolutionRound, ctx: JobContext) -> dict[str, Any]:
    if not evolution_round.settings.train:
        return {"skipped": "training disabled for this round"}
    run = evolution_round.training_run
    if run is None or run.status == TrainingRun.Status.FAILED:
        with transaction.atomic():
            run = TrainingRun.objects.create(
                base_policy=evolution_round.policy,
                config=evolution_round.settings.training_run_config(),
                round_number=evolution_round.number,
                job=ctx.job,
            )
            links = round_training_set(evolution_round, run)
            rejected = rejected_environments(evolution_round)
            if not links and rejected:  # the run's fallback would train every environment
                run.delete()
                reason = (
                    "nothing to train on: every proposal of "
                    f"{', '.join(sorted(rejected))} was rejected and no other environment has "
                    "training tasks to replay"
                )
                ctx.log(reason)
                return {"skipped": reason}
            TrainingTask.objects.bulk_create(links)
            ctx.log(replay_note(evolution_round, links))
            run.environments.set({link.task.environment for link in links})
            evolution_round.training_run = run
            evolution_round.save(update_fields=["training_run"])
    if run.status != TrainingRun.Status.SUCCEEDED:
        try:
            train_policy(run, ctx.progress)
        except Exception as exc:
            if not interrupted(exc):
                TrainingRun.objects.filter(pk=run.pk).update(
                    status=TrainingRun.Status.FAILED,
                    failure_reason=f"{type(exc).__name__}: {exc}",
                    finished_at=timezone.now(),
                )
            raise
        run.refresh_from_db()
    evolution_round.trained_policy = run.output_policy
    evolution_round.finished_at = timezone.now()
    evolution_round.save(update_fields=["trained_policy", "finished_at"])
    return {"training_run": run.pk, "output_policy": run.output_policy_id}
