"""A synthetic catalogue at the paper's scale, written with bulk inserts, for benchmarks only.

Paper scale: 2,000 environments over a 3-level taxonomy (20 primary, 50 secondary categories),
20,000 tools, 200,000 tasks, 50,000 trajectories of 20 steps (1,000,000 steps), plus policies,
training runs, jobs, evolution rounds with evaluations, diagnoses, failure labels and proposals,
so every console page and API list has data. Rows get explicit ids (offset past the current
maximum), so a second run adds to the catalogue instead of colliding.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.db.models import Max

from arena.models import (
    ArenaEvaluation,
    DiagnosisReport,
    EvolutionRound,
    ExpansionProposal,
    FailureLabel,
)
from aw_site.models import Job
from benchmarks.scale.writers import RowWriter, writer_for_connection
from environments.models import (
    CatalogueItem,
    CatalogueRun,
    Category,
    Environment,
    Theme,
    Tool,
    ToolTest,
)
from tasks.models import Task
from training.models import Policy, Step, TrainingMetric, TrainingRun, Trajectory

PRIMARY_NAMES = (
    "Shopping",
    "Travel",
    "Finance",
    "Health",
    "Education",
    "Entertainment",
    "Food & Dining",
    "Real Estate",
    "Transportation",
    "Communication",
    "Productivity",
    "Developer Tools",
    "Government",
    "Sports",
    "Weather",
    "News & Media",
    "Social",
    "Legal",
    "Energy",
    "Science",
)
NOUNS = (
    "book",
    "flight",
    "hotel",
    "invoice",
    "patient",
    "course",
    "movie",
    "recipe",
    "listing",
    "ticket",
    "message",
    "project",
    "repository",
    "permit",
    "match",
    "forecast",
    "article",
    "contract",
    "meter",
    "experiment",
    "order",
    "customer",
    "account",
    "station",
    "airport",
)
VERBS = ("get", "search", "list", "count", "create", "update", "delete", "aggregate")
ADJECTIVES = ("cheapest", "latest", "oldest", "largest", "open", "pending", "active", "overdue")
ERROR_LABELS = (
    "invalid_tool_call",
    "tool_error",
    "wrong_arguments",
    "missing_state_update",
    "wrong_state_update",
    "premature_answer",
    "step_budget_exhausted",
    "wrong_answer",
    "format_error",
    "repeated_call_loop",
)
JOB_KINDS = (
    "environments.build_catalogue",
    "tasks.synthesize",
    "training.train",
    "arena.evaluate",
    "arena.diagnose",
    "arena.apply_proposal",
    "system.worker_check",
)
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class ScaleSpec:
    primary_categories: int = 20
    secondary_categories: int = 50
    tertiary_per_secondary: int = 4
    environments: int = 2000
    tools_per_environment: int = 10
    tests_per_tool: int = 2
    tasks_per_environment: int = 100
    trajectories: int = 50_000
    steps_per_trajectory: int = 20
    policies: int = 10
    training_runs: int = 20
    metrics_per_run: int = 200
    rounds: int = 10
    proposals_per_round: int = 20
    environments_per_evaluation: int = 200
    jobs: int = 10_000

    def scaled(self, **changes: Any) -> ScaleSpec:
        return ScaleSpec(**{**asdict(self), **changes})


PAPER = ScaleSpec()
TINY = ScaleSpec(
    primary_categories=3,
    secondary_categories=5,
    tertiary_per_secondary=2,
    environments=5,
    tools_per_environment=3,
    tests_per_tool=1,
    tasks_per_environment=4,
    trajectories=5,
    steps_per_trajectory=4,
    policies=2,
    training_runs=2,
    metrics_per_run=5,
    rounds=2,
    proposals_per_round=3,
    environments_per_evaluation=3,
    jobs=5,
)
SCALES = {
    "paper": PAPER,
    "tiny": TINY,
    "tenth": PAPER.scaled(
        environments=200, trajectories=5000, jobs=1000, environments_per_evaluation=50
    ),
}


def spec_with_rows(rows: int) -> ScaleSpec:
    """A tiny spec where every list endpoint has about ``rows`` rows (for N+1 checks)."""
    return TINY.scaled(
        environments=rows,
        tools_per_environment=1,
        tasks_per_environment=1,
        trajectories=rows,
        policies=2,
        training_runs=rows,
        rounds=rows,
        proposals_per_round=1,
        jobs=rows,
        secondary_categories=max(5, min(rows, 50)),
        primary_categories=min(rows, 20) or 1,
        environments_per_evaluation=min(rows, 3),
        metrics_per_run=1,
    )


@dataclass
class GenerationReport:
    rows: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())

    def lines(self) -> list[str]:
        out = []
        for table, count in self.rows.items():
            seconds = self.seconds[table]
            out.append(
                f"{table:32s} {count:>10,d} rows {seconds:8.2f} s {count / max(seconds, 1e-9):>12,.0f} rows/s"
            )
        out.append(
            f"{'total':32s} {self.total_rows:>10,d} rows {self.total_seconds:8.2f} s "
            f"{self.total_rows / max(self.total_seconds, 1e-9):>12,.0f} rows/s"
        )
        return out


def _next_id(model: type[models.Model]) -> int:
    return (model.objects.aggregate(m=Max("pk"))["m"] or 0) + 1


class CatalogueGenerator:
    """Generates one catalogue; each ``_table`` step writes one model and times it."""

    def __init__(
        self,
        spec: ScaleSpec,
        writer: RowWriter,
        seed: int = 0,
        progress: Callable[[str], None] | None = None,
    ):
        self.spec = spec
        self.writer = writer
        self.random = random.Random(seed)
        self.progress = progress or (lambda line: None)
        self.report = GenerationReport()
        self.base: dict[type[models.Model], int] = {}

    def _table(
        self, model: type[models.Model], rows: Iterator[dict[str, Any]], label: str | None = None
    ) -> None:
        label = label or model._meta.db_table
        started = time.perf_counter()
        count = self.writer.write(model, rows)
        seconds = time.perf_counter() - started
        self.report.rows[label] = self.report.rows.get(label, 0) + count
        self.report.seconds[label] = self.report.seconds.get(label, 0.0) + seconds
        self.progress(
            f"{label}: {count:,d} rows in {seconds:.2f} s ({count / max(seconds, 1e-9):,.0f} rows/s)"
        )

    def _when(self, index: int, total: int) -> datetime:
        # Spread over 90 days, roughly increasing with id, with jitter (not id-ordered exactly).
        return EPOCH + timedelta(
            seconds=90 * 86400 * index / max(total, 1) + self.random.uniform(0, 3600)
        )

    def run(self) -> GenerationReport:
        for model in (
            Category,
            Theme,
            Environment,
            Tool,
            ToolTest,
            Task,
            Policy,
            TrainingRun,
            TrainingMetric,
            Trajectory,
            Step,
            Job,
            EvolutionRound,
            ArenaEvaluation,
            DiagnosisReport,
            FailureLabel,
            ExpansionProposal,
            CatalogueRun,
            CatalogueItem,
        ):
            self.base[model] = _next_id(model)
        with transaction.atomic():
            self._user()
            self._categories()
            self._environments()
            self._tasks()
            self._training()
            self._trajectories()
            self._jobs()
            self._catalogue_run()
            self._arena()
            self.writer.finish()
        return self.report

    # -- catalogue ---------------------------------------------------------------------------

    def _user(self) -> None:
        self.user, _ = get_user_model().objects.get_or_create(username="scale_generator")

    def _categories(self) -> None:
        spec, base = self.spec, self.base[Category]
        self.primary_ids = [base + i for i in range(spec.primary_categories)]
        self.secondary_ids = [
            base + spec.primary_categories + i for i in range(spec.secondary_categories)
        ]
        tertiary_start = base + spec.primary_categories + spec.secondary_categories
        self.tertiary_ids = [
            tertiary_start + i
            for i in range(spec.secondary_categories * spec.tertiary_per_secondary)
        ]

        def rows():
            for i, pk in enumerate(self.primary_ids):
                name = f"{PRIMARY_NAMES[i % len(PRIMARY_NAMES)]} {pk}"
                yield {
                    "id": pk,
                    "name": name,
                    "slug": f"primary-{pk}",
                    "parent_id": None,
                    "level": 1,
                }
            for i, pk in enumerate(self.secondary_ids):
                parent = self.primary_ids[i % len(self.primary_ids)]
                yield {
                    "id": pk,
                    "name": f"{NOUNS[i % len(NOUNS)].title()}s {pk}",
                    "slug": f"secondary-{pk}",
                    "parent_id": parent,
                    "level": 2,
                }
            for i, pk in enumerate(self.tertiary_ids):
                parent = self.secondary_ids[i // spec.tertiary_per_secondary]
                yield {
                    "id": pk,
                    "name": f"{ADJECTIVES[i % len(ADJECTIVES)].title()} {NOUNS[i % len(NOUNS)]}s {pk}",
                    "slug": f"tertiary-{pk}",
                    "parent_id": parent,
                    "level": 3,
                }

        self._table(Category, rows())

    def _environments(self) -> None:
        spec, rnd = self.spec, self.random
        theme_base, env_base = self.base[Theme], self.base[Environment]
        self.environment_ids = [env_base + i for i in range(spec.environments)]
        self.environment_nouns = {
            pk: NOUNS[(pk - env_base) % len(NOUNS)] for pk in self.environment_ids
        }
        self.verified_ids = []

        def themes():
            for i in range(spec.environments):
                noun = NOUNS[i % len(NOUNS)]
                yield {
                    "id": theme_base + i,
                    "name": f"{noun}-service-{theme_base + i}",
                    "title": f"{noun.title()} service {theme_base + i}",
                    "description": f"An API to manage {noun}s, their owners and history.",
                    "source_kind": ("mcp_spec", "tool_doc", "prd")[i % 3],
                    "raw_spec": {"tools": [f"get_{noun}", f"search_{noun}s"]},
                    "category_id": self.tertiary_ids[i % len(self.tertiary_ids)],
                    "created_at": self._when(i, spec.environments),
                }

        def environments():
            for i, pk in enumerate(self.environment_ids):
                noun = self.environment_nouns[pk]
                status = "verified" if i % 10 < 8 else ("draft", "rejected")[i % 2]
                if i % 97 == 0:
                    status = "retired"
                if status == "verified":
                    self.verified_ids.append(pk)
                created = self._when(i, spec.environments)
                yield {
                    "id": pk,
                    "name": f"{noun}-env-{pk}",
                    "version": 1,
                    "title": f"{noun.title()} environment {pk}",
                    "description": f"Executable {noun} database with {spec.tools_per_environment} verified tools; "
                    f"{ADJECTIVES[i % len(ADJECTIVES)]} {noun}s and their history.",
                    "theme_id": theme_base + i,
                    "category_id": self.tertiary_ids[i % len(self.tertiary_ids)],
                    "status": status,
                    "package_path": f"/srv/packages/{noun}-env-{pk}/v1",
                    "content_hash": f"{rnd.getrandbits(128):032x}",
                    "manifest": {"name": f"{noun}-env-{pk}", "tables": [noun, "owner", "event"]},
                    "provenance": [{"table": noun, "source": "synthetic", "kind": "scale"}],
                    "tool_count": spec.tools_per_environment,
                    "task_count": spec.tasks_per_environment,
                    "table_count": 3,
                    "row_count": rnd.randint(100, 50_000),
                    "created_by_id": self.user.pk,
                    "created_at": created,
                    "verified_at": created + timedelta(hours=1)
                    if status in ("verified", "retired")
                    else None,
                }

        self._table(Theme, themes())
        self._table(Environment, environments())

        tool_base, test_base = self.base[Tool], self.base[ToolTest]
        self.tool_names: dict[int, list[str]] = {}

        def tools():
            for e, env_id in enumerate(self.environment_ids):
                noun = self.environment_nouns[env_id]
                names = [
                    f"{VERBS[t % len(VERBS)]}_{noun}_{t}" for t in range(spec.tools_per_environment)
                ]
                self.tool_names[env_id] = names
                for t, name in enumerate(names):
                    yield {
                        "id": tool_base + e * spec.tools_per_environment + t,
                        "environment_id": env_id,
                        "name": name,
                        "description": f"{name.replace('_', ' ').capitalize()} by id or filter.",
                        "kind": "write"
                        if VERBS[t % len(VERBS)] in ("create", "update", "delete")
                        else "read",
                        "schema": {
                            "type": "function",
                            "function": {
                                "name": name,
                                "parameters": {
                                    "type": "object",
                                    "properties": {"id": {"type": "integer"}},
                                    "required": ["id"],
                                },
                            },
                        },
                        "source": f"def {name}(db, id):\n    return db.get(id)\n",
                        "verified": True,
                        "test_accuracy": 1.0,
                        "verification": {"compiled": True},
                    }

        def tool_tests():
            total_tools = spec.environments * spec.tools_per_environment
            for t in range(total_tools):
                for k in range(spec.tests_per_tool):
                    yield {
                        "id": test_base + t * spec.tests_per_tool + k,
                        "tool_id": tool_base + t,
                        "name": f"test_case_{k}",
                        "source": "def test(call):\n    assert call()\n",
                        "passed": True,
                    }

        self._table(Tool, tools())
        self._table(ToolTest, tool_tests())

    def _tasks(self) -> None:
        spec, rnd = self.spec, self.random
        base = self.base[Task]
        total = spec.environments * spec.tasks_per_environment
        self.task_count = total

        def rows():
            for i in range(total):
                env_id = self.environment_ids[i // spec.tasks_per_environment]
                noun = self.environment_nouns[env_id]
                names = self.tool_names[env_id]
                chain = [
                    {"tool": names[(i + k) % len(names)], "arguments": {"id": rnd.randint(1, 500)}}
                    for k in range(1 + i % 4)
                ]
                r = i % 10
                yield {
                    "id": base + i,
                    "environment_id": env_id,
                    "kind": "graph" if i % 3 else "programmatic",
                    "split": "train" if r < 8 else ("arena" if r == 8 else "heldout"),
                    "difficulty": 1 + i % 5,
                    "instruction": f"Find the {ADJECTIVES[i % len(ADJECTIVES)]} {noun} owned by customer "
                    f"{rnd.randint(1, 9999)} and report its {('price', 'status', 'date')[i % 3]} "
                    f"(task {base + i}).",
                    "gold_chain": chain,
                    "reference_answer": rnd.randint(1, 1000),
                    "expected_state_hash": f"{rnd.getrandbits(128):032x}",
                    "write_steps": i % 2,
                    "signature": f"sig-{base + i:x}",
                    "seed": i,
                    "round_number": None if i % 7 else 1 + i % max(spec.rounds, 1),
                    "created_at": self._when(i, total),
                }

        self._table(Task, rows())

    # -- training ----------------------------------------------------------------------------

    def _training(self) -> None:
        spec = self.spec
        policy_base, run_base, metric_base = (
            self.base[Policy],
            self.base[TrainingRun],
            self.base[TrainingMetric],
        )
        self.policy_ids = [policy_base + i for i in range(spec.policies)]
        self.run_ids = [run_base + i for i in range(spec.training_runs)]

        self._table(
            Policy,
            (
                {
                    "id": pk,
                    "name": f"scale-policy-{pk}",
                    "version": 1,
                    "kind": "local_hf",
                    "model_name": "tiny",
                    "created_at": self._when(i, spec.policies),
                }
                for i, pk in enumerate(self.policy_ids)
            ),
        )
        self._table(
            TrainingRun,
            (
                {
                    "id": pk,
                    "base_policy_id": self.policy_ids[i % len(self.policy_ids)],
                    "status": "succeeded",
                    "config": {"grpo_steps": spec.metrics_per_run},
                    "summary": {"mean_reward": 0.5},
                    "round_number": 1 + i % max(spec.rounds, 1),
                    "created_at": self._when(i, spec.training_runs),
                }
                for i, pk in enumerate(self.run_ids)
            ),
        )

        def metrics():
            for r, run_id in enumerate(self.run_ids):
                for s in range(spec.metrics_per_run):
                    yield {
                        "id": metric_base + r * spec.metrics_per_run + s,
                        "run_id": run_id,
                        "phase": "grpo",
                        "step": s,
                        "values": {"loss": 1.0 / (s + 1), "reward": s / spec.metrics_per_run},
                        "created_at": EPOCH,
                    }

        self._table(TrainingMetric, metrics())
        through = TrainingRun.environments.through
        self._table(
            through,
            (
                {"trainingrun_id": run_id, "environment_id": env_id}
                for run_id in self.run_ids
                for env_id in self.verified_ids[:50]
            ),
            label="training_trainingrun_environments",
        )

    def _trajectories(self) -> None:
        spec, rnd = self.spec, self.random
        base, step_base = self.base[Trajectory], self.base[Step]
        self.trajectory_ids = [base + i for i in range(spec.trajectories)]
        self.failed_ids: list[int] = []
        task_base = self.base[Task]

        def rows():
            for i, pk in enumerate(self.trajectory_ids):
                task_offset = rnd.randrange(self.task_count)
                env_id = self.environment_ids[task_offset // spec.tasks_per_environment]
                success = rnd.random() < 0.4
                if not success:
                    self.failed_ids.append(pk)
                reward = round(rnd.random() * (1.0 if success else 0.5), 3)
                yield {
                    "id": pk,
                    "task_id": task_base + task_offset,
                    "environment_id": env_id,
                    "policy_id": self.policy_ids[i % len(self.policy_ids)],
                    "training_run_id": self.run_ids[i % len(self.run_ids)] if i % 2 else None,
                    "final_answer": str(rnd.randint(1, 1000)),
                    "final_state_hash": f"{rnd.getrandbits(64):016x}",
                    "finished_reason": "answer" if success or i % 3 else "step_budget",
                    "reward": {"answer": reward, "state": 1.0, "format": 1.0, "efficiency": 0.5},
                    "total_reward": reward,
                    "success": success,
                    "step_count": spec.steps_per_trajectory,
                    "tokens": rnd.randint(200, 4000),
                    "duration_ms": rnd.uniform(50, 5000),
                    "created_at": self._when(i, spec.trajectories),
                }

        self._table(Trajectory, rows())

        def steps():
            per = spec.steps_per_trajectory
            for t, trajectory_id in enumerate(self.trajectory_ids):
                for k in range(per):
                    assistant = k % 2 == 0
                    failed = not assistant and rnd.random() < 0.05
                    yield {
                        "id": step_base + t * per + k,
                        "trajectory_id": trajectory_id,
                        "index": k,
                        "role": "assistant" if assistant else "tool",
                        "content": "I will look the record up." if assistant else "",
                        "tool_name": f"get_item_{k % 5}",
                        "tool_arguments": {"id": k + t % 100} if assistant else None,
                        "tool_result": None
                        if assistant
                        else {"id": k, "status": "open", "price": k * 1.5},
                        "error": "no such row" if failed else "",
                        "error_kind": "tool_error" if failed else "",
                        "duration_ms": 3.0,
                        "tokens": 40 if assistant else 0,
                    }

        self._table(Step, steps())

    # -- jobs and the arena ------------------------------------------------------------------

    def _jobs(self) -> None:
        spec, rnd, base = self.spec, self.random, self.base[Job]
        self.job_ids = [base + i for i in range(spec.jobs)]

        def rows():
            for i, pk in enumerate(self.job_ids):
                state = "succeeded" if i % 10 < 8 else ("failed", "running", "queued")[i % 3]
                created = self._when(i, spec.jobs)
                finished = state in ("succeeded", "failed")
                yield {
                    "id": pk,
                    "kind": JOB_KINDS[i % len(JOB_KINDS)],
                    "queue": "default",
                    "state": state,
                    "progress": 1.0 if finished else round(rnd.random(), 2),
                    "message": f"step {i % 20} of 20",
                    "log_tail": "[00:00:00] started\n" * 5,
                    "error": "ValueError: boom" if state == "failed" else "",
                    "arguments": {"seed": i},
                    "result": {"ok": True} if state == "succeeded" else {},
                    "worker": "worker@scale",
                    "attempts": 1,
                    "target": f"environment:{i}",
                    "created_by_id": self.user.pk,
                    "created_at": created,
                    "started_at": created if state != "queued" else None,
                    "finished_at": created + timedelta(minutes=3) if finished else None,
                    "heartbeat_at": created + timedelta(minutes=3) if state != "queued" else None,
                }

        self._table(Job, rows())

    def _catalogue_run(self) -> None:
        """One catalogue run whose ledger names every environment as a directory document."""
        run_id, item_base = self.base[CatalogueRun], self.base[CatalogueItem]
        self._table(
            CatalogueRun,
            iter(
                [
                    {
                        "id": run_id,
                        "source": "/scale/api",
                        "selection": {},
                        "tasks_per_environment": 5,
                        "listed": len(self.environment_ids),
                        "done_before": 0,
                        "job_id": None,
                        "created_by_id": self.user.pk,
                        "created_at": EPOCH,
                    }
                ]
            ),  # fmt: skip
        )

        def rows():
            for i, env_id in enumerate(self.environment_ids):
                rejected = i % 4 == 3
                yield {
                    "id": item_base + i,
                    "run_id": run_id,
                    "key": f"scale{env_id}.example.org/1.0/openapi.json",
                    "sha256": f"{env_id:064x}",
                    "state": "rejected" if rejected else "published",
                    "reason": "verify stage failed: too few tools verified" if rejected else "",
                    "reason_kind": "verify stage failed: too few tools verified"
                    if rejected
                    else "",
                    "category": "",
                    "themes": [],
                    "environments": [env_id],
                    "verified_tools": 0 if rejected else 5,
                    "job_id": None,
                    "seconds": 1.0 + i % 7,
                    "started_at": EPOCH,
                    "finished_at": EPOCH + timedelta(seconds=1 + i % 7),
                }

        self._table(CatalogueItem, rows())

    def _arena(self) -> None:
        spec, rnd = self.spec, self.random
        round_base, eval_base = self.base[EvolutionRound], self.base[ArenaEvaluation]
        report_base, label_base = self.base[DiagnosisReport], self.base[FailureLabel]
        proposal_base = self.base[ExpansionProposal]
        number_base = (EvolutionRound.objects.aggregate(m=Max("number"))["m"] or 0) + 1
        round_ids = [round_base + i for i in range(spec.rounds)]
        if not round_ids:
            return
        self._table(
            EvolutionRound,
            (
                {
                    "id": pk,
                    "number": number_base + i,
                    "status": "done" if i < spec.rounds - 1 else "awaiting_approval",
                    "policy_id": self.policy_ids[i % len(self.policy_ids)],
                    "training_run_id": self.run_ids[i % len(self.run_ids)]
                    if self.run_ids
                    else None,
                    "scores": {"overall": 0.3 + 0.02 * i},
                    "seed": i,
                    "current_job_id": self.job_ids[i] if i < len(self.job_ids) else None,
                    "started_by_id": self.user.pk,
                    "created_at": self._when(i, spec.rounds),
                }
                for i, pk in enumerate(round_ids)
            ),
        )
        self._table(
            ArenaEvaluation,
            (
                {
                    "id": eval_base + i,
                    "round_id": pk,
                    "policy_id": self.policy_ids[i % len(self.policy_ids)],
                    "results": {"overall": 0.3 + 0.02 * i},
                    "task_count": 500,
                    "success_rate": 0.4,
                    "mean_reward": 0.5,
                    "created_at": self._when(i, spec.rounds),
                }
                for i, pk in enumerate(round_ids)
            ),
        )
        self._table(
            DiagnosisReport,
            (
                {
                    "id": report_base + i,
                    "round_id": pk,
                    "evaluation_id": eval_base + i,
                    "distribution": {label: rnd.randint(0, 500) for label in ERROR_LABELS},
                    "weakest": {"environments": self.verified_ids[:5]},
                    "analysis": "Planning failures dominate.",
                    "created_at": self._when(i, spec.rounds),
                }
                for i, pk in enumerate(round_ids)
            ),
        )
        evaluation_trajectories = ArenaEvaluation.trajectories.through
        self._table(
            evaluation_trajectories,
            (
                {"arenaevaluation_id": eval_base + t % spec.rounds, "trajectory_id": pk}
                for t, pk in enumerate(self.trajectory_ids)
            ),
            label="arena_arenaevaluation_trajectories",
        )
        evaluation_environments = ArenaEvaluation.environments.through
        self._table(
            evaluation_environments,
            (
                {"arenaevaluation_id": eval_base + r, "environment_id": env_id}
                for r in range(spec.rounds)
                for env_id in self.verified_ids[: spec.environments_per_evaluation]
            ),
            label="arena_arenaevaluation_environments",
        )
        trajectory_round = {pk: t % spec.rounds for t, pk in enumerate(self.trajectory_ids)}
        self._table(
            FailureLabel,
            (
                {
                    "id": label_base + i,
                    "trajectory_id": pk,
                    "report_id": report_base + trajectory_round[pk],
                    "label": ERROR_LABELS[i % len(ERROR_LABELS)],
                    "evidence": {"step": i % spec.steps_per_trajectory},
                }
                for i, pk in enumerate(self.failed_ids)
            ),
        )
        kinds = ("more_tasks", "complexify_database", "new_environment")

        def proposals():
            for r, round_id in enumerate(round_ids):
                for p in range(spec.proposals_per_round):
                    i = r * spec.proposals_per_round + p
                    pending = r == spec.rounds - 1
                    yield {
                        "id": proposal_base + i,
                        "round_id": round_id,
                        "report_id": report_base + r,
                        "kind": kinds[i % 3],
                        "environment_id": self.verified_ids[i % len(self.verified_ids)]
                        if self.verified_ids
                        else None,
                        "category_id": self.secondary_ids[i % len(self.secondary_ids)],
                        "params": {"count": 50},
                        "rationale": f"{ERROR_LABELS[i % 10]} failures in this environment",
                        "status": "pending" if pending else ("applied", "rejected")[i % 2],
                        "reviewer_id": None if pending else self.user.pk,
                        "created_at": self._when(r, spec.rounds),
                    }

        self._table(ExpansionProposal, proposals())


def generate_catalogue(
    spec: ScaleSpec = PAPER,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    writer: RowWriter | None = None,
) -> GenerationReport:
    """Fill the current database with a synthetic catalogue of this spec; returns rows and timings."""
    return CatalogueGenerator(
        spec, writer or writer_for_connection(), seed=seed, progress=progress
    ).run()
