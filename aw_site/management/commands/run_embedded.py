"""The main job on the embedded default: catalogue, tasks, two evolution rounds, then the console.

Everything runs in this process (SQLite, in-process job worker, LLM-free paths, tiny local
policy), through the same jobs a production deployment hands to Celery. With AW_POLICY_BASE_URL
set, the rounds evaluate that endpoint policy instead (registered here), and train the
checkpoint it serves (AW_POLICY_CHECKPOINT) when it names one.
"""

from __future__ import annotations

import os
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from rest_framework.authtoken.models import Token

from arena.models import EvolutionRound
from arena.rounds import default_policy, start_round
from aw_site.jobs import enqueue, recover_in_process_jobs
from aw_site.models import Job
from aw_site.roles import ADMIN, REVIEWER, VIEWER, grant_role
from environments.builder.request import builtin_names
from environments.models import Environment
from tasks.models import Task
from tasks.service import synthesize_tasks
from training.models import Policy
from training.service import ensure_env_policy, ensure_tiny_policy

# Small enough for two cores: a few SFT epochs on gold trajectories, then two GRPO steps.
EMBEDDED_TRAINING = {
    "sft_epochs": 4,
    "grpo_steps": 2,
    "tasks_per_environment": 3,
    "heldout_per_environment": 2,
    "max_completion_length": 160,  # the tiny CPU policy: short turns keep the loop fast
}
DEMO_USERS = (("admin", ADMIN), ("reviewer", REVIEWER), ("viewer", VIEWER))


def quiet_library_progress() -> None:
    """The loop reports each job's progress in one line; the per-batch bars of datasets,
    transformers and the hub (loading weights, tokenizing, writing shards) would bury it.
    AW_LIBRARY_PROGRESS=1 keeps them."""
    if os.environ.get("AW_LIBRARY_PROGRESS") == "1":
        return
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    from datasets.utils.logging import disable_progress_bar as quiet_datasets
    from transformers.utils.logging import disable_progress_bar as quiet_transformers

    quiet_datasets()
    quiet_transformers()


class Command(BaseCommand):
    help = "Build the starter catalogue, synthesize tasks, run evolution rounds, serve the console."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--skip-loop", action="store_true", help="only serve the console")
        parser.add_argument("--no-serve", action="store_true", help="run the loop and exit")
        parser.add_argument("--rounds", type=int, default=2)
        parser.add_argument(
            "--sources", default="", help="comma-separated starter sources (default: all)"
        )
        parser.add_argument("--tasks-per-environment", type=int, default=12)

    def handle(
        self,
        *args,
        port: int,
        skip_loop: bool,
        no_serve: bool,
        rounds: int,
        sources: str,
        tasks_per_environment: int,
        **options,
    ):
        if settings.AW_JOBS_MODE != "thread":
            raise CommandError(
                "run_embedded is the embedded default: unset CELERY_BROKER_URL, or use the Celery workers"
            )
        if rounds < 0:
            raise CommandError(f"--rounds must be 0 or more, got {rounds}")
        names = [s for s in sources.split(",") if s] or builtin_names()
        unknown = [n for n in names if n not in builtin_names()]
        if unknown:
            raise CommandError(
                f"unknown source {', '.join(unknown)} in --sources; known sources: "
                + ", ".join(builtin_names())
            )
        quiet_library_progress()
        self.create_demo_users()
        self.env_policy = ensure_env_policy()
        if self.env_policy is not None:
            served = (
                self.env_policy.serves_checkpoint or "no checkpoint named (AW_POLICY_CHECKPOINT)"
            )
            self.stdout.write(
                f"endpoint policy {self.env_policy} from AW_POLICY_*: {self.env_policy.base_url} "
                f"model {self.env_policy.model_name or 'default'}, serves {served}"
            )
        with transaction.atomic():
            recovered = recover_in_process_jobs()
        if recovered:
            self.stdout.write(f"retrying jobs an earlier run left unfinished: {recovered}")
            self.finish_unfinished_rounds()
        if not skip_loop:
            started = time.monotonic()
            self.build_catalogue(names)
            self.synthesize(tasks_per_environment)
            for _ in range(rounds):
                self.run_round()
            self.print_scores()
            self.stdout.write(f"loop finished in {time.monotonic() - started:.0f} s")
        if not no_serve:
            self.stdout.write(f"console: http://127.0.0.1:{port}/  (API docs: /api/docs/)")
            call_command("runserver", f"127.0.0.1:{port}", use_reloader=False)

    def create_demo_users(self) -> None:
        password = os.environ.get("AW_DEMO_PASSWORD", "agent-world-demo")
        for username, role in DEMO_USERS:
            user, created = get_user_model().objects.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.is_staff = role == ADMIN
                user.save()
            grant_role(user, role)
            token, _ = Token.objects.get_or_create(user=user)
            note = (
                f"password from AW_DEMO_PASSWORD (default {password!r})"
                if created
                else "existing user"
            )
            self.stdout.write(f"user {username:9} role {role:9} {note}; API token {token.key}")

    def wait_jobs(self, kind: str, ids: list[int], label: str) -> None:
        last = ""
        while True:
            jobs = list(Job.objects.filter(pk__in=ids))
            finished = [job for job in jobs if job.is_finished]
            line = f"{label}: {len(finished)}/{len(ids)} done"
            if line != last:
                self.stdout.write(line)
                last = line
            if len(finished) == len(ids):
                failed = [job for job in jobs if job.state == Job.State.FAILED]
                for job in failed:
                    self.stderr.write(f"  {job.kind} #{job.pk} ({job.target}) failed: {job.error}")
                return
            time.sleep(1)

    def build_catalogue(self, names: list[str]) -> None:
        missing = [
            n
            for n in names
            if not Environment.objects.filter(name=n, status=Environment.Status.VERIFIED).exists()
        ]
        if not missing:
            self.stdout.write(f"catalogue: {len(names)} environments already verified")
            return
        with transaction.atomic():
            parent = enqueue(
                "environments.build_catalogue", {"sources": missing}, target="catalogue"
            )
        self.wait_jobs("environments.build_catalogue", [parent.pk], "catalogue fan-out")
        children = Job.objects.get(pk=parent.pk).result.get("jobs", [])
        self.wait_jobs("environments.build", children, "environments built")
        verified = Environment.objects.filter(status=Environment.Status.VERIFIED)
        tools = sum(verified.values_list("tool_count", flat=True))
        categories = {env.category.primary().name for env in verified if env.category}
        self.stdout.write(
            f"catalogue: {verified.count()} verified environments, {tools} verified tools, {len(categories)} primary categories"
        )

    def synthesize(self, per_environment: int) -> None:
        for environment in Environment.objects.filter(status=Environment.Status.VERIFIED):
            if Task.objects.filter(environment=environment, split=Task.Split.TRAIN).exists():
                continue
            created = synthesize_tasks(
                environment,
                count=per_environment,
                min_walk_length=1,
                max_walk_length=3,
                write_steps=1,
            )
            # programmatic tasks train too (the easiest are taken in turns with graph tasks)
            created += synthesize_tasks(
                environment, kind=Task.Kind.PROGRAMMATIC, count=max(1, per_environment // 4)
            )
            self.stdout.write(f"tasks: {len(created)} in {environment.label}")

    def finish_unfinished_rounds(self) -> None:
        unfinished = EvolutionRound.objects.exclude(status__in=["done", "failed"]).order_by(
            "number"
        )
        for evolution_round in unfinished:
            self.follow_round(evolution_round)

    def run_round(self) -> None:
        if self.env_policy is None:
            ensure_tiny_policy()
        policy = default_policy()
        train = True
        if (
            policy is not None
            and policy.kind == Policy.Kind.OPENAI
            and not policy.serves_checkpoint
        ):
            # Nothing to train: evaluate, diagnose and expand only (the API would fail the train
            # step with the same reason).
            train = False
            self.stdout.write(
                f"{policy} names no checkpoint it serves (AW_POLICY_CHECKPOINT): this round "
                "evaluates, diagnoses and expands without training"
            )
        with transaction.atomic():
            evolution_round = start_round(
                policy=policy,
                auto_approve=True,
                environments_per_category=2,
                tasks_per_environment=3,
                train=train,
                training=EMBEDDED_TRAINING,
            )
        self.stdout.write(f"round {evolution_round.number}: started with {evolution_round.policy}")
        self.follow_round(evolution_round)

    def follow_round(self, evolution_round: EvolutionRound) -> None:
        last = ""
        while True:
            evolution_round.refresh_from_db()
            job = evolution_round.current_job
            line = f"round {evolution_round.number}: {evolution_round.status}"
            if job is not None and not job.is_finished:
                line += f" ({job.progress_percent}% {job.message})"
            if line != last:
                self.stdout.write(line)
                last = line
            if evolution_round.status in (EvolutionRound.Status.DONE, EvolutionRound.Status.FAILED):
                break
            time.sleep(1)
        if evolution_round.status == EvolutionRound.Status.FAILED:
            raise CommandError(
                f"round {evolution_round.number} failed: {evolution_round.failure_reason}"
            )

    def print_scores(self) -> None:
        rounds = list(EvolutionRound.objects.order_by("number"))
        categories = sorted({name for r in rounds for name in r.scores})
        header = f"{'category':32}" + "".join(f"  round {r.number:>2}" for r in rounds)
        self.stdout.write("success rate per category (fresh arena tasks each round):")
        self.stdout.write(header)
        for name in categories:
            cells = "".join(
                f"  {r.scores[name]:8.3f}" if name in r.scores else f"  {'-':>8}" for r in rounds
            )
            self.stdout.write(f"{name:32}{cells}")
        for r in rounds:
            evaluation = r.evaluations.first()
            if evaluation:
                self.stdout.write(
                    f"round {r.number}: {evaluation.task_count} episodes, success {evaluation.success_rate:.3f}, "
                    f"mean reward {evaluation.mean_reward:.3f}, policy {r.policy}"
                )
