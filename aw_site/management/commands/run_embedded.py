"""The main job on the embedded default: the console first, then the loop as jobs.

``./dev run`` ends here. The console is served at once (gunicorn, its own processes) and the
logins are printed first; job worker processes poll the database for queued jobs
(``manage.py run_job_worker``, AW_JOBS_MODE=db: no broker, nothing runs in the web server's
threads); then the main loop is queued as one job (``arena.main_loop``: catalogue -> tasks ->
rounds, each stage's work as its own jobs) and this process prints one line per stage as the
job's log advances. Ctrl-C stops the children. With AW_POLICY_BASE_URL set, the rounds evaluate
that endpoint policy instead (registered here), and train the checkpoint it serves
(AW_POLICY_CHECKPOINT) when it names one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from rest_framework.authtoken.models import Token

from arena.main_loop import KIND as MAIN_LOOP
from arena.main_loop import first_round_seconds
from arena.models import EvolutionRound
from aw_site.jobs import enqueue, recover_in_process_jobs
from aw_site.models import Job
from aw_site.roles import ADMIN, REVIEWER, VIEWER, grant_role
from environments.builder.request import builtin_names
from training.service import ensure_env_policy

# The default loop: a first complete round within ten minutes on two cores.
FIRST_SOURCES = ("currencies", "elements", "time_zones")
FIRST_TASKS_PER_ENVIRONMENT = 4
FIRST_ROUND = {"environments_per_category": 1, "tasks_per_environment": 3}
FIRST_TRAINING = {
    "sft_epochs": 2,
    "grpo_steps": 1,
    "tasks_per_environment": 2,
    "heldout_per_environment": 1,
    "max_completion_length": 128,  # the tiny CPU policy: short turns keep the loop fast
}
# --full: every starter source, two rounds, a few SFT epochs on gold trajectories, two GRPO steps.
FULL_TASKS_PER_ENVIRONMENT = 12
FULL_ROUND = {"environments_per_category": 2, "tasks_per_environment": 3}
EMBEDDED_TRAINING = {
    "sft_epochs": 4,
    "grpo_steps": 2,
    "tasks_per_environment": 3,
    "heldout_per_environment": 2,
    "max_completion_length": 160,
}
DEMO_USERS = (("admin", ADMIN), ("reviewer", REVIEWER), ("viewer", VIEWER))
JOB_WORKERS = 3  # one follows the main loop, two run its builds, syntheses and round steps
SERVER_START_SECONDS = 60
WORKER_NICE = 10  # the console stays quick while a round trains on the same cores


def quiet_library_progress() -> None:
    """The loop reports each job's progress in one line; the per-batch bars of datasets,
    transformers and the hub (loading weights, tokenizing, writing shards) would bury it.
    AW_LIBRARY_PROGRESS=1 keeps them."""
    if os.environ.get("AW_LIBRARY_PROGRESS") == "1":
        return
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    # The libraries' deprecation notices (transformers, TRL) between the stage lines, likewise.
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning,ignore::DeprecationWarning")


def loop_arguments(
    full: bool, sources: str, rounds: int | None, tasks_per_environment: int | None
) -> dict[str, Any]:
    """The main loop job's arguments: the short first loop by default, today's with --full."""
    names = [s for s in sources.split(",") if s] or (
        builtin_names() if full else list(FIRST_SOURCES)
    )
    return {
        "sources": names,
        "tasks_per_environment": tasks_per_environment
        or (FULL_TASKS_PER_ENVIRONMENT if full else FIRST_TASKS_PER_ENVIRONMENT),
        "rounds": rounds if rounds is not None else (2 if full else 1),
        "round_options": {
            **(FULL_ROUND if full else FIRST_ROUND),
            "training": EMBEDDED_TRAINING if full else FIRST_TRAINING,
        },
    }


class Command(BaseCommand):
    help = "Serve the console, start job workers, run the loop (catalogue, tasks, rounds) as jobs."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--skip-loop", action="store_true", help="only serve the console")
        parser.add_argument("--no-serve", action="store_true", help="run the loop and exit")
        parser.add_argument(
            "--full", action="store_true", help="every starter source, 12 tasks each, two rounds"
        )
        parser.add_argument("--rounds", type=int, default=None, help="rounds (default 1; 2 --full)")
        parser.add_argument(
            "--sources",
            default="",
            help=f"comma-separated starter sources (default {','.join(FIRST_SOURCES)}; all --full)",
        )
        parser.add_argument("--tasks-per-environment", type=int, default=None)
        parser.add_argument("--job-workers", type=int, default=JOB_WORKERS)
        parser.add_argument("--web-workers", type=int, default=2)

    def handle(self, *args, port: int, skip_loop: bool, no_serve: bool, **options):
        if settings.AW_JOBS_MODE == "celery":
            raise CommandError(
                "run_embedded is the embedded default: unset CELERY_BROKER_URL, or use the Celery workers"
            )
        if options["rounds"] is not None and options["rounds"] < 0:
            raise CommandError(f"--rounds must be 0 or more, got {options['rounds']}")
        quiet_library_progress()
        self.no_serve = no_serve
        self.arguments = loop_arguments(
            options["full"], options["sources"], options["rounds"], options["tasks_per_environment"]
        )
        if not skip_loop and options["job_workers"] == 1:
            raise CommandError(
                "--job-workers 1: the main loop holds one worker while it follows its stages; "
                "give it at least 2 (0 starts none, for workers started separately)"
            )
        unknown = sorted(set(self.arguments["sources"]) - set(builtin_names()))
        if unknown:  # refused before anything starts
            raise CommandError(
                f"unknown source {', '.join(unknown)} in --sources; known sources: "
                + ", ".join(builtin_names())
            )
        # Jobs stay queued in the database for the worker processes, in this process and its
        # children alike: nothing runs in the web server's threads.
        os.environ["AW_JOBS_MODE"] = "db"
        settings.AW_JOBS_MODE = "db"
        # SIGTERM (a service manager, a test) stops the children as Ctrl-C does.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.children: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        started = time.monotonic()
        logins = self.create_demo_users()
        with transaction.atomic():
            recovered = recover_in_process_jobs()
        try:
            if not no_serve:
                self.serve(port, options["web_workers"])
                self.say(
                    f"console: http://127.0.0.1:{port}/  (up {time.monotonic() - started:.0f} s "
                    "after set-up; API docs /api/docs/)"
                )
            for line in logins:
                self.say(line)
            self.report_env_policy()
            if recovered:
                self.say(f"retrying jobs an earlier run left unfinished: {recovered}")
            self.workers = [
                self.start_child(["run_job_worker", f"--nice={WORKER_NICE}"])
                for _ in range(options["job_workers"])
            ]
            if not skip_loop:
                self.follow(self.main_loop_job())
            if not no_serve:
                self.say("serving the console; Ctrl-C stops it and the job workers")
                code = self.children[0].wait()
                if code:
                    raise CommandError(f"the web server exited with status {code}")
        except KeyboardInterrupt:
            self.say("stopping the console and the job workers")
        finally:
            self.stop_children()

    def say(self, line: str) -> None:
        """One line to the terminal now (a pipe, as in the tests, would otherwise buffer it)."""
        self.stdout.write(line)
        self.stdout.flush()

    # --- the processes ---
    def start_child(self, arguments: list[str]) -> subprocess.Popen:
        command = [sys.executable, "-m", *arguments]
        if arguments[0] != "gunicorn":
            command = [sys.executable, str(settings.BASE_DIR / "manage.py"), *arguments]
        child = subprocess.Popen(command, cwd=settings.BASE_DIR, env=os.environ.copy())
        self.children.append(child)
        return child

    def serve(self, port: int, web_workers: int) -> None:
        """The console in its own processes (gunicorn); returns once the login page answers."""
        self.start_child(
            [
                "gunicorn",
                "aw_site.wsgi:application",
                f"--bind=127.0.0.1:{port}",
                f"--workers={web_workers}",
                "--threads=4",
                "--log-level=warning",
                "--graceful-timeout=5",
            ]
        )
        deadline = time.monotonic() + SERVER_START_SECONDS
        url = f"http://127.0.0.1:{port}/accounts/login/"
        while time.monotonic() < deadline:
            if self.children[0].poll() is not None:
                raise CommandError(f"the web server on port {port} exited at start (port in use?)")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        raise CommandError(f"the console did not answer at {url} within {SERVER_START_SECONDS} s")

    def stop_children(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for child in self.children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    # --- the loop ---
    def main_loop_job(self) -> Job:
        """An unfinished main loop of an earlier run is followed; otherwise a new one is queued."""
        waiting = Job.objects.filter(kind=MAIN_LOOP).exclude(state__in=Job.FINISHED_STATES)
        earlier = waiting.order_by("created_at").first()
        if earlier is not None:
            self.say(f"following the main loop an earlier run left unfinished (job {earlier.pk})")
            return earlier
        arguments = self.arguments
        with transaction.atomic():
            job = enqueue(MAIN_LOOP, arguments, target="main loop")
        self.say(
            f"main loop (job {job.pk}): {len(arguments['sources'])} sources "
            f"({', '.join(arguments['sources'])}), {arguments['tasks_per_environment']} tasks "
            f"each, {arguments['rounds']} round(s); the dashboard shows its progress"
        )
        return job

    def follow(self, job: Job) -> None:
        """Print each new line of the main loop's log until it finishes."""
        printed: set[str] = set()
        while True:
            job.refresh_from_db()
            for line in job.log_tail.splitlines():
                if line not in printed and "] started on " not in line:
                    printed.add(line)
                    self.say(line)
            if job.is_finished:
                break
            if self.workers and all(worker.poll() is not None for worker in self.workers):
                raise CommandError("the job workers exited; the main loop cannot go on")
            time.sleep(1)
        if job.state == Job.State.FAILED:
            # The console keeps serving (its job page has the log) unless there is none.
            reason = f"the main loop (job {job.pk}) failed: {job.error}; its log: /jobs/{job.pk}/"
            if self.no_serve:
                raise CommandError(reason)
            self.stderr.write(reason)
            return
        self.print_scores()
        seconds = first_round_seconds(job.result.get("stages", []))
        if seconds is not None:
            self.say(f"first round complete {seconds:.0f} s after the loop started")
        self.say(f"loop finished in {job.result.get('seconds', 0):.0f} s")

    def create_demo_users(self) -> list[str]:
        password = os.environ.get("AW_DEMO_PASSWORD", "agent-world-demo")
        lines = []
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
            lines.append(f"user {username:9} role {role:9} {note}; API token {token.key}")
        return lines

    def report_env_policy(self) -> None:
        env_policy = ensure_env_policy()
        if env_policy is not None:
            served = env_policy.serves_checkpoint or "no checkpoint named (AW_POLICY_CHECKPOINT)"
            self.say(
                f"endpoint policy {env_policy} from AW_POLICY_*: {env_policy.base_url} "
                f"model {env_policy.model_name or 'default'}, serves {served}"
            )

    def print_scores(self) -> None:
        rounds = list(EvolutionRound.objects.order_by("number"))
        if not rounds:
            return
        categories = sorted({name for r in rounds for name in r.scores})
        header = f"{'category':32}" + "".join(f"  round {r.number:>2}" for r in rounds)
        self.say("success rate per category (fresh arena tasks each round):")
        self.say(header)
        for name in categories:
            cells = "".join(
                f"  {r.scores[name]:8.3f}" if name in r.scores else f"  {'-':>8}" for r in rounds
            )
            self.say(f"{name:32}{cells}")
        for r in rounds:
            evaluation = r.evaluations.first()
            if evaluation:
                self.say(
                    f"round {r.number}: {evaluation.task_count} episodes, success {evaluation.success_rate:.3f}, "
                    f"mean reward {evaluation.mean_reward:.3f}, policy {r.policy}"
                )
