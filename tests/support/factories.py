"""Plain functions that build console-shaped test data with the ORM.

Each function makes one kind of record with sensible defaults and returns it; keyword arguments
override fields. They need a database (pytest-django's ``db`` fixture or ``django_db`` mark).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from django.utils import timezone

from arena.models import (
    ArenaEvaluation,
    DiagnosisReport,
    EvolutionRound,
    ExpansionProposal,
    FailureLabel,
)
from aw_site.models import Job
from environments.models import Category, Environment, Theme, Tool, ToolTest
from tasks.models import Task
from training.models import Policy, Step, TrainingMetric, TrainingRun, Trajectory

_sequence = itertools.count(1)


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_sequence)}"


def make_category(
    primary: str = "Shopping", secondary: str | None = "Books", tertiary: str | None = "Bookstore"
) -> Category:
    return Category.ensure_path(primary, secondary, tertiary)


def tool_schema(name: str, properties: dict | None = None, required: list[str] = ()) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ').capitalize()}.",
            "parameters": {
                "type": "object",
                "properties": properties or {},
                "required": list(required),
            },
        },
    }


def make_environment(
    name: str | None = None,
    *,
    category: Category | None = None,
    status: str = Environment.Status.VERIFIED,
    tools: int = 3,
    tasks: int = 2,
    package_path: str = "",
    manifest: dict | None = None,
    **fields: Any,
) -> Environment:
    """An environment with ``tools`` verified tools (each with two tests) and ``tasks`` tasks."""
    name = name or unique("env")
    tool_names = [f"get_{name.replace('-', '_')}_{i}" for i in range(tools)]
    manifest = manifest or {
        "name": name,
        "version": fields.get("version", 1),
        "title": name.title(),
        "tools": [tool_schema(t, {"id": {"type": "integer"}}, ["id"]) for t in tool_names],
        "tool_kinds": {t: "read" for t in tool_names},
    }
    environment = Environment.objects.create(
        name=name,
        title=fields.pop("title", name.replace("-", " ").title()),
        description=fields.pop("description", f"The {name} environment, for tests."),
        category=category,
        status=status,
        package_path=package_path,
        manifest=manifest,
        tool_count=tools,
        task_count=tasks,
        table_count=fields.pop("table_count", 2),
        row_count=fields.pop("row_count", 120),
        provenance=fields.pop(
            "provenance",
            [
                {
                    "table": "item",
                    "source": "tests/support/factories.py",
                    "kind": "synthetic",
                    "detail": "",
                }
            ],
        ),
        verified_at=timezone.now() if status == Environment.Status.VERIFIED else None,
        **fields,
    )
    for schema in manifest["tools"]:
        tool_name = schema["function"]["name"]
        make_tool(
            environment,
            tool_name,
            schema=schema,
            kind=manifest["tool_kinds"].get(tool_name, "read"),
        )
    for index in range(tasks):
        make_task(environment, instruction=f"Task {index + 1} of {name}: look up item {index + 1}.")
    return environment


def make_tool(
    environment: Environment,
    name: str,
    *,
    schema: dict | None = None,
    kind: str = "read",
    passing_tests: int = 2,
    failing_tests: int = 0,
) -> Tool:
    tool = Tool.objects.create(
        environment=environment,
        name=name,
        description=f"{name} for tests",
        kind=kind,
        schema=schema or tool_schema(name),
        source=f"def {name}(db, **params):\n    return {{'ok': True}}\n",
        verified=failing_tests == 0,
        test_accuracy=passing_tests / max(1, passing_tests + failing_tests),
        verification={"compiled": True, "sandbox": "clean"},
    )
    for i in range(passing_tests):
        ToolTest.objects.create(
            tool=tool,
            name=f"test_{name}__case_{i}",
            passed=True,
            source=f"def test_{name}__case_{i}(call):\n    assert call('{name}')\n",
        )
    for i in range(failing_tests):
        ToolTest.objects.create(
            tool=tool,
            name=f"test_{name}__broken_{i}",
            passed=False,
            error="AssertionError: expected 3 rows, got 0",
        )
    return tool


def make_package_environment(root: Path, name: str = "bookstore", **fields: Any) -> Environment:
    """An environment backed by the real sample bookstore package on disk (tests/support)."""
    from tests.support.sample_package import TESTS_SOURCE, TOOLS_SOURCE, build_sample_package

    path = build_sample_package(Path(root), name=name)
    manifest = json.loads((path / "manifest.json").read_text())
    provenance = json.loads((path / "provenance.json").read_text())
    category = Category.ensure_path(*manifest["category"].values())
    theme = Theme.objects.create(
        name=name,
        title="Bookstore",
        source_kind=Theme.SourceKind.PRD,
        description="An online bookstore.",
        provenance={"document": "docs/prd/bookstore.md"},
    )
    environment = Environment.objects.create(
        name=name,
        title=manifest["title"],
        description=manifest["description"],
        category=category,
        theme=theme,
        status=fields.pop("status", Environment.Status.VERIFIED),
        package_path=str(path),
        manifest=manifest,
        provenance=provenance,
        tool_count=len(manifest["tools"]),
        table_count=3,
        row_count=7,
        content_hash="0" * 64,
        verification_report={"tool_tests": {"passed": 6, "failed": 0}},
        **fields,
    )
    for schema in manifest["tools"]:
        tool_name = schema["function"]["name"]
        tool = make_tool(
            environment,
            tool_name,
            schema=schema,
            kind=manifest["tool_kinds"][tool_name],
            passing_tests=0,
        )
        start = TOOLS_SOURCE.find(f"def {tool_name}(")
        end = TOOLS_SOURCE.find("\n\n\ndef ", start)
        tool.source = TOOLS_SOURCE[start : end if end > 0 else None].strip()
        tool.save(update_fields=["source"])
        for test_name in (
            n for n in TESTS_SOURCE.split("def ")[1:] if n.startswith(f"test_{tool_name}__")
        ):
            ToolTest.objects.create(tool=tool, name=test_name.split("(")[0], passed=True)
    return environment


def make_task(environment: Environment, **fields: Any) -> Task:
    defaults: dict[str, Any] = {
        "kind": Task.Kind.GRAPH,
        "split": Task.Split.ARENA,
        "difficulty": 2,
        "instruction": "Find the book 'Dune' and order two copies for Ada.",
        "gold_chain": [
            {"tool": "search_books", "arguments": {"title_contains": "Dune"}},
            {"tool": "place_order", "arguments": {"book_id": 1, "quantity": 2, "customer": "Ada"}},
        ],
        "reference_answer": {"purchase_id": 1, "total": 19.98},
        "expected_state_hash": "a" * 64,
        "write_steps": 1,
        "signature": unique("sig"),
    }
    defaults.update(fields)
    return Task.objects.create(environment=environment, **defaults)


def make_policy(name: str | None = None, **fields: Any) -> Policy:
    return Policy.objects.create(
        name=name or unique("policy"), kind=fields.pop("kind", Policy.Kind.GOLD), **fields
    )


DEFAULT_STEPS = [
    {
        "role": "assistant",
        "content": "I will search for the book first.",
        "tool_name": "search_books",
        "tool_arguments": {"title_contains": "Dune"},
        "tool_result": [{"id": 1, "title": "Dune", "price": 9.99, "stock": 5}],
    },
    {
        "role": "assistant",
        "content": "Now I order the copies.",
        "tool_name": "place_order",
        "tool_arguments": {"book_id": 1, "quantity": 20, "customer": "Ada"},
        "error": "ValueError: only 5 in stock",
        "error_kind": "tool_error",
    },
    {
        "role": "assistant",
        "content": "The order could not be placed; Dune is sold out.",
    },
]


def make_trajectory(
    task: Task,
    policy: Policy | None = None,
    *,
    success: bool = False,
    steps: list[dict[str, Any]] | None = None,
    labels: list[str] = (),
    report: DiagnosisReport | None = None,
    evaluation: ArenaEvaluation | None = None,
    **fields: Any,
) -> Trajectory:
    """A trajectory with its steps, reward breakdown and (for failures) diagnosis labels."""
    steps = DEFAULT_STEPS if steps is None else steps
    reward = fields.pop("reward", None) or {
        "answer": {
            "score": 1.0 if success else 0.0,
            "reason": "matches the reference" if success else "answer differs from the reference",
        },
        "state": {
            "score": 1.0 if success else 0.0,
            "reason": "state hash matches" if success else "purchase row missing",
        },
        "format": {"score": 1.0, "reason": "every tool call parsed"},
        "efficiency": {
            "score": 0.8,
            "reason": f"{len(steps)} steps for a gold chain of {task.gold_length}",
        },
        "total": 0.95 if success else 0.2,
    }
    trajectory = Trajectory.objects.create(
        task=task,
        environment=task.environment,
        policy=policy or make_policy(),
        finished_reason=fields.pop("finished_reason", Trajectory.FinishedReason.ANSWER),
        final_answer=fields.pop("final_answer", steps[-1].get("content", "") if steps else ""),
        reward=reward,
        total_reward=reward.get("total", 0.0),
        success=success,
        step_count=len(steps),
        tokens=fields.pop("tokens", 40 * len(steps)),
        duration_ms=fields.pop("duration_ms", 12.5 * len(steps)),
        state_diff=fields.pop(
            "state_diff", {} if not success else {"purchase": {"added": [{"id": 1}]}}
        ),
        **fields,
    )
    Step.objects.bulk_create(
        Step(
            trajectory=trajectory,
            index=index,
            role=step.get("role", "assistant"),
            content=step.get("content", ""),
            tool_name=step.get("tool_name", ""),
            tool_arguments=step.get("tool_arguments"),
            tool_result=step.get("tool_result"),
            error=step.get("error", ""),
            error_kind=step.get("error_kind", ""),
            state_diff=step.get("state_diff"),
            duration_ms=4.0,
            tokens=40,
        )
        for index, step in enumerate(steps, start=1)
    )
    for label in labels:
        FailureLabel.objects.create(
            trajectory=trajectory,
            report=report,
            label=label,
            evidence={"step": 2, "why": f"{label} seen"},
        )
    if evaluation is not None:
        evaluation.trajectories.add(trajectory)
    return trajectory


def make_job(
    kind: str = "arena.round_step",
    *,
    state: str = Job.State.RUNNING,
    progress: float = 0.0,
    log: str = "",
    **fields: Any,
) -> Job:
    now = timezone.now()
    return Job.objects.create(
        kind=kind,
        state=state,
        progress=progress,
        log_tail=log,
        message=fields.pop("message", ""),
        started_at=now if state != Job.State.QUEUED else None,
        heartbeat_at=now,
        finished_at=now if state in Job.FINISHED_STATES else None,
        **fields,
    )


def make_round(
    number: int | None = None,
    *,
    policy: Policy | None = None,
    status: str = EvolutionRound.Status.AWAITING_APPROVAL,
    scores: dict[str, float] | None = None,
    job: Job | None = None,
    **fields: Any,
) -> EvolutionRound:
    if number is None:
        last = EvolutionRound.objects.order_by("-number").values_list("number", flat=True).first()
        number = (last or 0) + 1
    evolution_round = EvolutionRound.objects.create(
        number=number,
        policy=policy or make_policy(),
        status=status,
        scores=scores if scores is not None else {"Shopping": 0.4, "Travel": 0.55},
        current_job=job,
        **fields,
    )
    if job is not None:
        evolution_round.jobs.add(job)
    return evolution_round


def scoreboard_results(scores: dict[str, float], episodes: int = 20) -> dict[str, Any]:
    """Evaluation results in the scoreboard's shape: per-category success with its interval."""
    from aw_site.stats import wilson_interval

    cells = {}
    for name, rate in (scores or {}).items():
        successes = round(rate * episodes)
        low, high = wilson_interval(successes, episodes)
        cells[name] = {
            "episodes": episodes,
            "successes": successes,
            "success_rate": successes / episodes,
            "success_interval": [round(low, 4), round(high, 4)],
            "mean_reward": rate,
        }
    return {"category": cells}


def make_evaluation(evolution_round: EvolutionRound, **fields: Any) -> ArenaEvaluation:
    return ArenaEvaluation.objects.create(
        round=evolution_round,
        policy=evolution_round.policy,
        results=fields.pop("results", None) or scoreboard_results(evolution_round.scores),
        task_count=fields.pop("task_count", 8),
        success_rate=fields.pop("success_rate", 0.5),
        mean_reward=fields.pop("mean_reward", 0.47),
        **fields,
    )


def make_diagnosis(evolution_round: EvolutionRound, **fields: Any) -> DiagnosisReport:
    distribution = fields.pop("distribution", None) or {
        "by_label": {"tool_error": 5, "wrong_arguments": 3, "premature_answer": 1},
        "by_environment": {"bookstore@v1": 6, "airports@v1": 3},
        "by_category": {"Shopping": 6, "Travel": 3},
    }
    return DiagnosisReport.objects.create(
        round=evolution_round,
        distribution=distribution,
        weakest=fields.pop(
            "weakest", {"environments": ["bookstore@v1"], "capabilities": ["write chains"]}
        ),
        analysis=fields.pop(
            "analysis", "The policy orders more copies than are in stock: it skips the stock check."
        ),
        **fields,
    )


def make_proposal(
    evolution_round: EvolutionRound,
    *,
    environment: Environment | None = None,
    kind: str = ExpansionProposal.Kind.MORE_TASKS,
    report: DiagnosisReport | None = None,
    **fields: Any,
) -> ExpansionProposal:
    return ExpansionProposal.objects.create(
        round=evolution_round,
        report=report,
        kind=kind,
        environment=environment,
        params=fields.pop("params", {"count": 8, "focus": "write chains"}),
        rationale=fields.pop("rationale", "Most failures are stock errors in write chains."),
        evidence=fields.pop("evidence", {"failed_trajectories": 6}),
        **fields,
    )


def make_training_run(
    policy: Policy | None = None,
    *,
    metrics: int = 5,
    status: str = TrainingRun.Status.SUCCEEDED,
    job: Job | None = None,
    **fields: Any,
) -> TrainingRun:
    run = TrainingRun.objects.create(
        base_policy=policy or make_policy(),
        status=status,
        job=job,
        config=fields.pop("config", {"learning_rate": 1e-5, "num_generations": 4}),
        **fields,
    )
    for step in range(metrics):
        add_metric(run, step)
    return run


def add_metric(run: TrainingRun, step: int) -> TrainingMetric:
    return TrainingMetric.objects.create(
        run=run,
        step=step,
        values={
            "reward_mean": round(0.2 + 0.1 * step, 3),
            "success_rate": round(min(1.0, 0.1 + 0.08 * step), 3),
            "kl": round(0.01 * step, 3),
            "loss": round(1.0 / (step + 1), 3),
            "tokens_per_s": 1500 + 10 * step,
            "frac_reward_zero_std": round(max(0.0, 0.75 - 0.1 * step), 3),
            "tools/call_frequency": round(0.5 + 0.25 * step, 3),
            "tools/failure_frequency": 0.1,
            "episodes/token_budget_ended": 0.0,
            "learnability/unlearnable_tasks": step,
        },
    )


def make_catalogue(
    size: int, *, primaries: int = 5, secondaries: int = 3, tertiaries: int = 2
) -> list[Category]:
    """``size`` environments spread over a full three-level taxonomy, made with bulk inserts."""
    leaves = []
    for p in range(primaries):
        for s in range(secondaries):
            for t in range(tertiaries):
                leaves.append(
                    Category.ensure_path(
                        f"Primary {p}", f"Secondary {p}.{s}", f"Tertiary {p}.{s}.{t}"
                    )
                )
    statuses = [Environment.Status.VERIFIED] * 4 + [
        Environment.Status.DRAFT,
        Environment.Status.REJECTED,
    ]
    Environment.objects.bulk_create(
        Environment(
            name=f"catalogue-env-{i:05d}",
            title=f"Catalogue environment {i}",
            description=f"Environment number {i} for catalogue tests.",
            category=leaves[i % len(leaves)],
            status=statuses[i % len(statuses)],
            tool_count=3 + i % 17,
            task_count=i % 40,
            table_count=1 + i % 6,
            row_count=100 * (1 + i % 50),
            origin=CATALOGUE_ORIGINS[i % len(CATALOGUE_ORIGINS)],
            build_yield=catalogue_yield(i),
        )
        for i in range(size)
    )
    return leaves


# The origins a catalogue mixes, as environments.build_yield.origin_of names them.
CATALOGUE_ORIGINS = ("theme (openapi)", "theme (openapi)", "built-in source", "upload")


def catalogue_yield(i: int) -> dict[str, Any]:
    """A build yield shaped like a theme build's (stages and funnel), sized like a real one."""
    origin = CATALOGUE_ORIGINS[i % len(CATALOGUE_ORIGINS)]
    tools = 3 + i % 17
    if origin.startswith("theme"):
        ingest = {"theme_tools": tools + 4, "source_kind": "openapi"}
    elif origin == "upload":
        ingest = {"files": [f"data-{i}.csv"], "tables": 1 + i % 6}
    else:
        ingest = {"source": f"source-{i}", "tables": 1 + i % 6}
    return {
        "ingest": ingest,
        "schema": {"tables": 1 + i % 6, "foreign_keys": i % 4, "category": "Travel"},
        "tools": {"generated": tools + 2, "schema_tools": tools + 2},
        "verify": {"verified": tools, "rejected": 2, "reasons": {"contract": 1, "accuracy": 1}},
        "funnel": {"theme_tools": tools + 4, "tools_implemented": tools + 2}
        if origin.startswith("theme")
        else {},
    }


def make_review_scene(tmp_root: Path | None = None) -> dict[str, Any]:
    """One round awaiting approval with evaluation, diagnosis, labelled failures and proposals."""
    category = make_category("Shopping", "Books", "Bookstore")
    if tmp_root is not None:
        environment = make_package_environment(tmp_root)
    else:
        environment = make_environment("bookstore", category=category)
    policy = make_policy("tiny-policy", kind=Policy.Kind.LOCAL_HF)
    previous = make_round(
        policy=policy, status=EvolutionRound.Status.DONE, scores={"Shopping": 0.3, "Travel": 0.5}
    )
    evolution_round = make_round(policy=policy, scores={"Shopping": 0.45, "Travel": 0.6})
    evaluation = make_evaluation(evolution_round)
    report = make_diagnosis(evolution_round, evaluation=evaluation)
    task = make_task(environment)
    failed = make_trajectory(
        task, policy, labels=["tool_error", "wrong_arguments"], report=report, evaluation=evaluation
    )
    passed = make_trajectory(
        task,
        policy,
        success=True,
        evaluation=evaluation,
        steps=[
            dict(DEFAULT_STEPS[0]),
            {
                "role": "assistant",
                "content": "Ordering two.",
                "tool_name": "place_order",
                "tool_arguments": {"book_id": 1, "quantity": 2, "customer": "Ada"},
                "tool_result": {"purchase_id": 1, "total": 19.98},
                "state_diff": {"purchase": {"added": [{"id": 1, "book_id": 1, "quantity": 2}]}},
            },
            {"role": "assistant", "content": "Ordered two copies of Dune for 19.98."},
        ],
    )
    proposal = make_proposal(evolution_round, environment=environment, report=report)
    second = make_proposal(
        evolution_round,
        environment=environment,
        report=report,
        kind=ExpansionProposal.Kind.COMPLEXIFY_DATABASE,
        params={"rows_per_table": 200},
    )
    return {
        "environment": environment,
        "policy": policy,
        "round": evolution_round,
        "previous": previous,
        "evaluation": evaluation,
        "report": report,
        "task": task,
        "failed": failed,
        "passed": passed,
        "proposal": proposal,
        "second_proposal": second,
    }
