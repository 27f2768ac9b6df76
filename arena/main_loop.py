"""The main loop of the embedded default as one job: catalogue -> tasks -> round 1 -> round N.

``./dev run`` queues it (job ``arena.main_loop``) once the console is up; a worker process runs
it. It queues each stage's own jobs (``environments.build_catalogue``, ``tasks.synthesize``, the
round's steps through ``start_round``), follows them in the database, and records where it is in
its job row (``stages`` in the result): the terminal prints each stage line from the job's log,
and the dashboard reads the same record to say what runs now, what comes next and an estimate of
the time left. A retried attempt resumes at the first unfinished stage (each stage is idempotent).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from arena.models import EvolutionRound
from arena.rounds import default_policy, start_round
from aw_site.jobs import JobContext, enqueue
from aw_site.models import Job
from environments.models import Environment
from tasks.models import Task
from training.models import Policy
from training.service import ensure_env_policy, ensure_tiny_policy

KIND = "arena.main_loop"
POLL_SECONDS = 1.0
# A-priori seconds per stage on two CPU cores (measured with the default loop, docs/benchmarks.md);
# the estimate scales them by how fast the finished stages ran against theirs.
EXPECTED_SECONDS = {"catalogue_per_source": 6.0, "tasks_per_environment": 3.0, "round": 360.0}
# Each step's share of a round's time (measured: the short default loop on two cores), so the
# round's progress, and the estimate drawn from it, advance with time rather than with steps.
ROUND_STEP_SHARES = {
    EvolutionRound.Status.EVALUATING: 0.15,
    EvolutionRound.Status.DIAGNOSING: 0.02,
    EvolutionRound.Status.AWAITING_APPROVAL: 0.01,
    EvolutionRound.Status.EXPANDING: 0.37,
    EvolutionRound.Status.TRAINING: 0.45,
}


def round_progress(status: str, step_progress: float) -> float:
    """The share of the round done: the steps before this one, and this one's own progress."""
    done = 0.0
    for step, share in ROUND_STEP_SHARES.items():
        if step == status:
            return done + share * step_progress
        done += share
    return 1.0 if status == EvolutionRound.Status.DONE else 0.0


def plan_stages(sources: list[str], rounds: int) -> list[dict[str, Any]]:
    """The stages in order, each with an a-priori duration for the estimate."""
    stages = [
        {
            "key": "catalogue",
            "label": f"build the starter catalogue ({len(sources)} sources)",
            "expected_seconds": EXPECTED_SECONDS["catalogue_per_source"] * len(sources) / 2,
        },
        {
            "key": "tasks",
            "label": "synthesize tasks in each verified environment",
            "expected_seconds": EXPECTED_SECONDS["tasks_per_environment"] * len(sources),
        },
    ]
    for number in range(1, rounds + 1):
        stages.append(
            {
                "key": f"round-{number}",
                "label": f"evolution round {number} of {rounds} (evaluate, diagnose, expand, train)",
                "expected_seconds": EXPECTED_SECONDS["round"],
            }
        )
    for stage in stages:
        stage.update(started_at=None, finished_at=None, progress=0.0, summary="")
    return stages


def run_main_loop(
    ctx: JobContext,
    sources: list[str],
    tasks_per_environment: int,
    rounds: int,
    round_options: dict[str, Any],
) -> dict[str, Any]:
    stages = ctx.saved.get("stages") or plan_stages(sources, rounds)
    loop = _Loop(ctx, stages)
    for index, stage in enumerate(stages):
        if stage["finished_at"]:
            continue
        loop.begin(index)
        if stage["key"] == "catalogue":
            summary = loop.catalogue(sources)
        elif stage["key"] == "tasks":
            summary = loop.tasks(tasks_per_environment)
        else:
            summary = loop.evolution_round(round_options)
        loop.finish(index, summary)
    return {"stages": stages, "seconds": loop.total_seconds()}


class _Loop:
    """Runs one stage at a time and keeps the job row's record of the stages current."""

    def __init__(self, ctx: JobContext, stages: list[dict[str, Any]]):
        self.ctx = ctx
        self.stages = stages
        self.index = 0

    # --- the record ---
    def begin(self, index: int) -> None:
        self.index = index
        stage = self.stages[index]
        stage["started_at"] = stage["started_at"] or timezone.now().isoformat()
        self.ctx.checkpoint(stages=self.stages)
        self.ctx.log(f"stage {index + 1}/{len(self.stages)}: {stage['label']}")

    def finish(self, index: int, summary: str) -> None:
        stage = self.stages[index]
        stage.update(finished_at=timezone.now().isoformat(), progress=1.0, summary=summary)
        seconds = seconds_between(stage["started_at"], stage["finished_at"])
        self.ctx.checkpoint(stages=self.stages)
        self.ctx.progress((index + 1) / len(self.stages))
        self.ctx.log(f"stage {index + 1}/{len(self.stages)} done in {seconds:.0f} s: {summary}")

    def report(self, fraction: float, **saved: Any) -> None:
        stage = self.stages[self.index]
        stage["progress"] = round(min(1.0, max(0.0, fraction)), 3)
        stage.update(saved)
        self.ctx.checkpoint(stages=self.stages)
        self.ctx.progress((self.index + stage["progress"]) / len(self.stages))

    def total_seconds(self) -> float:
        first, last = self.stages[0]["started_at"], self.stages[-1]["finished_at"]
        return seconds_between(first, last) if first and last else 0.0

    def wait_jobs(self, ids: list[int], share: tuple[float, float] = (0.0, 1.0)) -> list[Job]:
        """Follow jobs until all finished, reporting their mean progress within ``share``."""
        low, high = share
        while True:
            jobs = list(Job.objects.filter(pk__in=ids))
            done = sum(1.0 if job.is_finished else job.progress for job in jobs)
            self.report(low + (high - low) * done / max(1, len(ids)))
            if all(job.is_finished for job in jobs):
                return jobs
            time.sleep(POLL_SECONDS)

    # --- the stages ---
    def catalogue(self, sources: list[str]) -> str:
        stage = self.stages[self.index]
        verified = Environment.objects.filter(status=Environment.Status.VERIFIED)
        missing = [name for name in sources if not verified.filter(name=name).exists()]
        children = stage.get("jobs")
        if children is None and missing:
            with transaction.atomic():
                parent = enqueue(KIND_CATALOGUE, {"sources": missing}, target="catalogue")
            (parent,) = self.wait_jobs([parent.pk], share=(0.0, 0.05))
            if parent.state == Job.State.FAILED:
                raise RuntimeError(
                    f"the catalogue fan-out (job {parent.pk}) failed: {parent.error}"
                )
            children = parent.result.get("jobs", [])
            self.report(0.05, jobs=children)
        failed = [j for j in self.wait_jobs(children or [], (0.05, 1.0)) if j.state == "failed"]
        for job in failed:
            self.ctx.log(f"  build {job.target or job.pk} failed: {job.error}")
        tools = sum(verified.values_list("tool_count", flat=True))
        if not verified.exists():
            raise RuntimeError("no environment was verified: nothing to synthesize tasks in")
        return f"{verified.count()} verified environments, {tools} verified tools" + (
            f", {len(failed)} builds failed" if failed else ""
        )

    def tasks(self, per_environment: int) -> str:
        stage = self.stages[self.index]
        ids = stage.get("jobs")
        if ids is None:
            ids = []
            with transaction.atomic():
                for environment in Environment.objects.filter(status=Environment.Status.VERIFIED):
                    if Task.objects.filter(
                        environment=environment, split=Task.Split.TRAIN
                    ).exists():
                        continue
                    graph = {"count": per_environment, "max_walk_length": 3, "write_steps": 1}
                    # programmatic tasks train too (taken in turns with graph tasks)
                    programmatic = {
                        "kind": Task.Kind.PROGRAMMATIC,
                        "count": max(1, per_environment // 4),
                    }
                    for arguments in (graph, programmatic):
                        job = enqueue(
                            KIND_SYNTHESIZE,
                            {"environment": environment.pk, **arguments},
                            target=environment.label,
                        )
                        ids.append(job.pk)
            self.report(0.0, jobs=ids)
        failed = [j for j in self.wait_jobs(ids) if j.state == Job.State.FAILED]
        for job in failed:
            self.ctx.log(f"  synthesis in {job.target} failed: {job.error}")
        train = Task.objects.filter(split=Task.Split.TRAIN)
        return f"{train.count()} training tasks in {train.values('environment').distinct().count()} environments"

    def evolution_round(self, options: dict[str, Any]) -> str:
        stage = self.stages[self.index]
        number = stage.get("round")
        if number is None:
            evolution_round = _unfinished_round() or self._start_round(options)
            self.report(0.0, round=evolution_round.number)
        else:
            evolution_round = EvolutionRound.objects.get(number=number)
        self.ctx.log(f"  round {evolution_round.number} runs with {evolution_round.policy}")
        status = ""
        while True:
            evolution_round.refresh_from_db()
            if evolution_round.status != status:
                status = evolution_round.status
                self.ctx.log(f"  round {evolution_round.number}: {status.replace('_', ' ')}")
            if status == EvolutionRound.Status.FAILED:
                raise RuntimeError(
                    f"round {evolution_round.number} failed: {evolution_round.failure_reason}"
                )
            if status == EvolutionRound.Status.DONE:
                break
            job = evolution_round.current_job
            within = job.progress if job is not None and not job.is_finished else 0.0
            self.report(round_progress(status, within))
            time.sleep(POLL_SECONDS)
        evaluation = evolution_round.evaluations.first()
        if evaluation is None:
            return f"round {evolution_round.number} done"
        return (
            f"round {evolution_round.number} done: {evaluation.task_count} episodes, success "
            f"{evaluation.success_rate:.3f}, mean reward {evaluation.mean_reward:.3f}"
        )

    def _start_round(self, options: dict[str, Any]) -> EvolutionRound:
        if ensure_env_policy() is None:
            ensure_tiny_policy()
        policy = default_policy()
        options = dict(options)
        if (
            policy is not None
            and policy.kind == Policy.Kind.OPENAI
            and not policy.serves_checkpoint
        ):
            options["train"] = False  # nothing to train: evaluate, diagnose and expand only
            self.ctx.log(
                f"  {policy} names no checkpoint it serves (AW_POLICY_CHECKPOINT): the round "
                "evaluates, diagnoses and expands without training"
            )
        with transaction.atomic():
            return start_round(policy=policy, auto_approve=True, **options)


KIND_CATALOGUE = "environments.build_catalogue"
KIND_SYNTHESIZE = "tasks.synthesize"


def _unfinished_round() -> EvolutionRound | None:
    return (
        EvolutionRound.objects.exclude(
            status__in=[EvolutionRound.Status.DONE, EvolutionRound.Status.FAILED]
        )
        .order_by("number")
        .first()
    )


def first_round_seconds(stages: list[dict[str, Any]]) -> float | None:
    """Seconds from the loop's start to the end of its first round (None: no round finished)."""
    first = next((s for s in stages if s["key"].startswith("round-")), None)
    if first is None or not first["finished_at"]:
        return None
    return seconds_between(stages[0]["started_at"], first["finished_at"])


def seconds_between(start: str | None, end: str | None) -> float:
    if not start or not end:
        return 0.0
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


# --- what the dashboard shows ---


@dataclass(frozen=True)
class StageView:
    number: int
    label: str
    state: str  # "done", "running", "next", "failed"
    percent: int
    summary: str


@dataclass(frozen=True)
class LoopView:
    """The main loop as the dashboard shows it: stages, the one running, the next one, and an
    estimate of the seconds left (None once finished)."""

    job: Job
    stages: list[StageView]
    current: StageView | None
    next: StageView | None
    seconds_left: float | None
    elapsed_seconds: float

    @property
    def left_text(self) -> str:
        return about_minutes(self.seconds_left) if self.seconds_left is not None else ""

    @property
    def elapsed_text(self) -> str:
        return about_minutes(self.elapsed_seconds).removeprefix("about ")


def about_minutes(seconds: float) -> str:
    if seconds < 60:
        return "under a minute"
    return f"about {round(seconds / 60)} min"


def latest_loop() -> Job | None:
    return Job.objects.filter(kind=KIND).order_by("-created_at", "-pk").first()


def loop_view(job: Job | None, now: datetime | None = None) -> LoopView | None:
    if job is None:
        return None
    now = now or timezone.now()
    stages = (job.result or {}).get("stages") or plan_stages(
        list(job.arguments.get("sources", [])), int(job.arguments.get("rounds", 0))
    )
    views = []
    for number, stage in enumerate(stages, start=1):
        if stage["finished_at"]:
            state = "done"
        elif stage["started_at"]:
            state = "failed" if job.state == Job.State.FAILED else "running"
        else:
            state = "next"
        views.append(
            StageView(number, stage["label"], state, int(100 * stage["progress"]), stage["summary"])
        )
    current = next((v for v in views if v.state in ("running", "failed")), None)
    upcoming = next((v for v in views if v.state == "next"), None)
    start = job.started_at or job.created_at
    end = job.finished_at or now
    seconds_left = None if job.is_finished else estimate_seconds_left(stages, now)
    return LoopView(job, views, current, upcoming, seconds_left, (end - start).total_seconds())


def estimate_seconds_left(stages: list[dict[str, Any]], now: datetime) -> float:
    """What is left, from the running stage's progress and elapsed time and the a-priori
    durations of the stages to come; rounds to come are scaled by how the finished rounds
    compared with theirs (a quick catalogue says little about training)."""
    rounds_done = [s for s in stages if s["finished_at"] and s["key"].startswith("round-")]
    expected_done = sum(s["expected_seconds"] for s in rounds_done)
    actual_done = sum(seconds_between(s["started_at"], s["finished_at"]) for s in rounds_done)
    speed = min(3.0, max(0.3, actual_done / expected_done)) if expected_done > 0 else 1.0
    left = 0.0
    for stage in stages:
        if stage["finished_at"]:
            continue
        expected = stage["expected_seconds"] * (speed if stage["key"].startswith("round-") else 1)
        if stage["started_at"]:
            elapsed = (now - datetime.fromisoformat(stage["started_at"])).total_seconds()
            progress = stage["progress"]
            if progress >= 0.1:
                left += elapsed * (1 - progress) / progress
            else:
                left += max(expected - elapsed, 0.1 * expected)
        else:
            left += expected
    return left
