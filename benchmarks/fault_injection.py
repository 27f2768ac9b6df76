"""Fault injection for jobs: SIGKILL a worker mid-job, restart Redis and PostgreSQL under load.

    createdb -h 127.0.0.1 aw_faults && DATABASE_URL=postgres://root@127.0.0.1:5432/aw_faults .venv/bin/python manage.py migrate
    DATABASE_URL=postgres://root@127.0.0.1:5432/aw_faults .venv/bin/python benchmarks/fault_injection.py \
        --job 'system.worker_check:{"seconds": 6, "steps": 30}' --faults kill,redis,postgres
    DATABASE_URL=... .venv/bin/python benchmarks/fault_injection.py --round --timeout 600

For every ``--job KIND:JSON`` a real Celery worker (tests/support/worker.py) takes the job, is
SIGKILLed once the job reports progress, and is restarted under the same name; the job must end
succeeded after a retry or failed with a reason. Then, with a light load of the same jobs, Redis
(``redis-cli shutdown nosave`` + the ./dev start command) and PostgreSQL (``pg_ctlcluster ...
restart``) are restarted once each, and every job must reach a final state. ``--round`` runs
one auto-approved evolution round (it needs verified environments with tasks) and hits a
different job of it with each fault: the round must end done, with no trajectory lost or
doubled and nothing half-built. This script stands in for beat: it calls ``reap_stale_jobs``
every few seconds. Redis and PostgreSQL are shared with other work on this machine: each is down
for seconds and always started again (``finally``). Use a database of its own: the reaper it
runs retries every stale running job in that database.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")
BROKER = os.environ.get("AW_FAULT_BROKER_URL", "redis://127.0.0.1:6379/13")
os.environ["CELERY_BROKER_URL"] = BROKER
os.environ["CELERY_RESULT_BACKEND"] = BROKER
STALE_SECONDS = 8
os.environ["AW_JOB_STALE_SECONDS"] = str(STALE_SECONDS)
os.environ["AW_JOB_QUEUED_STALE_SECONDS"] = str(STALE_SECONDS)

REDIS_START = [
    "redis-server",
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "-::1",
    "--port",
    "6379",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    "/var/lib/redis",
    "--logfile",
    "/var/log/redis/ci.log",
]


def pg_restart() -> None:
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
        check=True,
        timeout=120,
    )


def redis_up() -> bool:
    return (
        subprocess.run(
            ["redis-cli", "-h", "127.0.0.1", "ping"], capture_output=True, text=True
        ).stdout.strip()
        == "PONG"
    )


def postgres_up() -> bool:
    return subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432"]).returncode == 0


def ensure_services() -> None:
    """Whatever happened, leave Redis and PostgreSQL running."""
    if not redis_up():
        subprocess.run(REDIS_START, check=False)
    if not postgres_up():
        version = sorted(os.listdir("/etc/postgresql"))[-1]
        subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "start"], check=False
        )
    for _ in range(60):
        if redis_up() and postgres_up():
            return
        time.sleep(0.5)
    raise RuntimeError("Redis or PostgreSQL did not come back")


def db_call(function, *args, retries: int = 60):
    """Run an ORM call, reconnecting while PostgreSQL restarts."""
    from django.db import InterfaceError, OperationalError, connection

    for _attempt in range(retries):
        try:
            return function(*args)
        except (OperationalError, InterfaceError):
            connection.close()
            time.sleep(0.5)
    return function(*args)


def enqueue_job(kind: str, arguments: dict):
    from django.db import transaction

    from aw_site.jobs import enqueue

    with transaction.atomic():
        return enqueue(kind, arguments, target="fault-injection")


def job_row(pk: int):
    from aw_site.models import Job

    return Job.objects.get(pk=pk)


class Beat:
    """Stands in for celery beat: reaps stale jobs every few seconds while the script waits."""

    def __init__(self, every: float = 3.0):
        self.every = every
        self.last = 0.0

    def tick(self) -> None:
        from aw_site.jobs import reap_stale_jobs

        if time.monotonic() - self.last > self.every:
            db_call(reap_stale_jobs)
            self.last = time.monotonic()


def wait_final(ids: list[int], timeout: float) -> dict[int, object]:
    """Poll until every job is final, reaping stale ones as beat would."""
    deadline = time.monotonic() + timeout
    beat = Beat()
    while time.monotonic() < deadline:
        rows = {pk: db_call(job_row, pk) for pk in ids}
        if all(row.is_finished for row in rows.values()):
            return rows
        beat.tick()
        time.sleep(0.5)
    return {pk: db_call(job_row, pk) for pk in ids}


def describe(row) -> str:
    reason = f" error={row.error[:100]!r}" if row.error else ""
    return f"job {row.pk} {row.kind} {row.state} attempts={row.attempts}{reason}"


def kill_scenario(kind: str, arguments: dict, worker, timeout: float) -> bool:
    job = enqueue_job(kind, arguments)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and db_call(job_row, job.pk).progress <= 0.05:
        if db_call(job_row, job.pk).is_finished:
            break
        time.sleep(0.1)
    before = db_call(job_row, job.pk)
    worker.kill()
    print(
        f"  SIGKILLed {worker.hostname} while {describe(before)} progress={before.progress:.2f}",
        flush=True,
    )
    worker.start()
    row = wait_final([job.pk], timeout)[job.pk]
    ok = (row.state == "succeeded" and row.attempts >= 2) or (
        row.state == "failed" and bool(row.error)
    )
    print(f"  -> {describe(row)}: {'ok' if ok else 'NOT OK'}", flush=True)
    return ok


def outage_scenario(
    name: str, kind: str, arguments: dict, count: int, outage, timeout: float
) -> bool:
    ids = [enqueue_job(kind, arguments).pk for _ in range(count)]
    time.sleep(1.5)
    started = time.monotonic()
    try:
        outage()
    finally:
        ensure_services()
    print(f"  {name} restarted, back after {time.monotonic() - started:.1f} s", flush=True)
    rows = wait_final(ids, timeout)
    states = [row.state for row in rows.values()]
    ok = all(row.is_finished for row in rows.values())
    print(
        f"  -> {len(ids)} jobs: "
        + ", ".join(f"{s}={states.count(s)}" for s in sorted(set(states)))
        + f": {'ok' if ok else 'NOT OK'}",
        flush=True,
    )
    for row in rows.values():
        if not row.is_finished or row.state == "failed":
            print(f"     {describe(row)}", flush=True)
    return ok


def round_scenario(worker, faults: list[str], timeout: float) -> bool:
    """One auto-approved evolution round with each fault hitting a different job of it: the
    round must end done (or failed with a reason), every job final, no trajectory lost or
    doubled, no environment half-built."""
    from django.db import transaction

    from arena.rounds import start_round
    from tests.support.training import QUICK_TRAINING
    from training.service import ensure_tiny_policy

    policy = db_call(ensure_tiny_policy)
    with transaction.atomic():
        evolution_round = start_round(
            policy=policy,
            auto_approve=True,
            environments_per_category=1,
            tasks_per_environment=4,
            training=QUICK_TRAINING,
        )
    print(f"round {evolution_round.number} started (policy {policy})", flush=True)
    hit: set[int] = set()
    for fault in faults:
        # A kill lands mid-work; an outage lands on whichever job of the round runs next.
        least = 0.1 if fault == "kill" else -1.0
        job = wait_for_fresh_running_job(evolution_round.pk, hit, least, timeout)
        if job is None:
            print(f"  no job of the round left for the {fault} fault", flush=True)
            break
        hit.add(job.pk)
        started = time.monotonic()
        if fault == "kill":
            worker.kill()
            worker.start()
        else:
            try:
                OUTAGES[fault]()
            finally:
                ensure_services()
        print(
            f"  {fault} during {describe(job)} progress={job.progress:.2f}; "
            f"back after {time.monotonic() - started:.1f} s",
            flush=True,
        )
    final = wait_round(evolution_round.pk, timeout)
    return check_round(final)


def wait_for_fresh_running_job(round_id: int, hit: set[int], least: float, timeout: float):
    """The round's current job once it runs with progress over `least`, if not one hit before;
    None when the round ended (or the wait timed out) first."""
    from arena.models import EvolutionRound

    deadline = time.monotonic() + timeout
    beat = Beat()
    while time.monotonic() < deadline:
        record = db_call(
            lambda: EvolutionRound.objects.select_related("current_job").get(pk=round_id)
        )
        if record.status in ("done", "failed"):
            return None
        job = record.current_job
        if (
            job is not None
            and job.pk not in hit
            and job.state == "running"
            and job.progress > least
        ):
            return job
        beat.tick()
        time.sleep(0.05)
    print(f"  no new running job of the round within {timeout:.0f} s", flush=True)
    return None


def wait_round(round_id: int, timeout: float):
    from arena.models import EvolutionRound

    deadline = time.monotonic() + timeout
    beat = Beat()
    while time.monotonic() < deadline:
        record = db_call(lambda: EvolutionRound.objects.get(pk=round_id))
        if record.status in ("done", "failed"):
            return record
        beat.tick()
        time.sleep(0.5)
    return db_call(lambda: EvolutionRound.objects.get(pk=round_id))


def check_round(record) -> bool:
    from environments.jobs import UNFINISHED, packages_root
    from environments.models import Environment

    problems = []
    if record.status == "failed" and not record.failure_reason:
        problems.append("failed without a reason")
    if record.status not in ("done", "failed"):
        problems.append(f"still {record.status}")
    for job in record.jobs.order_by("pk"):
        print(f"     {describe(job)}", flush=True)
        if not job.is_finished:
            problems.append(f"job {job.pk} still {job.state}")
    for evaluation in record.evaluations.all():
        tasks = list(evaluation.trajectories.values_list("task_id", flat=True))
        print(
            f"     evaluation {evaluation.pk}: {len(tasks)} trajectories, "
            f"{len(set(tasks))} tasks, task_count {evaluation.task_count}",
            flush=True,
        )
        if len(tasks) != len(set(tasks)) or len(tasks) != evaluation.task_count:
            problems.append(f"evaluation {evaluation.pk} lost or doubled trajectories")
    if Environment.objects.filter(status__in=UNFINISHED).exists():
        problems.append("an environment was left half-built")
    recorded = {
        str(Path(p).resolve()) for p in Environment.objects.values_list("package_path", flat=True)
    }
    on_disk = {str(p.resolve()) for p in packages_root().glob("*/v*")}
    if on_disk - recorded:
        problems.append(f"package directories nobody recorded: {sorted(on_disk - recorded)}")
    ok = not problems and record.status == "done"
    print(
        f"  -> round {record.number} {record.status}"
        + (f" ({record.failure_reason[:120]})" if record.failure_reason else "")
        + f": {'ok' if ok else 'NOT OK: ' + '; '.join(problems)}",
        flush=True,
    )
    return ok


def redis_outage() -> None:
    subprocess.run(["redis-cli", "-h", "127.0.0.1", "shutdown", "nosave"], check=False)
    time.sleep(2)
    subprocess.run(REDIS_START, check=True)


OUTAGES = {"redis": redis_outage, "postgres": pg_restart}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--job", action="append", default=[], help="KIND:JSON arguments (repeatable)"
    )
    parser.add_argument("--faults", default="kill,redis,postgres")
    parser.add_argument("--load", type=int, default=4, help="jobs in flight during an outage")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument(
        "--round",
        action="store_true",
        help="also run one evolution round with each fault hitting a different job of it",
    )
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL"):
        parser.error("set DATABASE_URL (PostgreSQL shared with the worker)")
    jobs = args.job or ([] if args.round else ['system.worker_check:{"seconds": 6, "steps": 30}'])
    faults = set(args.faults.split(","))

    import django

    django.setup()
    import redis

    from tests.support.worker import WorkerProcess

    redis.Redis.from_url(BROKER).flushdb()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log = Path(f"/tmp/aw-fault-worker-{uuid.uuid4().hex[:6]}.log")
    worker = WorkerProcess(
        f"faultworker-{uuid.uuid4().hex[:6]}@localhost", "default,sandbox,gpu", env, log
    ).start()
    results: list[tuple[str, bool]] = []
    try:
        for spec in jobs:
            kind, _, raw = spec.partition(":")
            arguments = json.loads(raw or "{}")
            if "kill" in faults:
                print(f"kill: {kind} {arguments}", flush=True)
                results.append(
                    (f"kill {kind}", kill_scenario(kind, arguments, worker, args.timeout))
                )
            for name, outage in OUTAGES.items():
                if name in faults:
                    print(f"{name} restart under {args.load} x {kind}", flush=True)
                    passed = outage_scenario(name, kind, arguments, args.load, outage, args.timeout)
                    results.append((f"{name} {kind}", passed))
        if args.round:
            order = [fault for fault in ("kill", *OUTAGES) if fault in faults]
            print(f"round with faults {', '.join(order)}", flush=True)
            results.append(
                ("round " + ",".join(order), round_scenario(worker, order, args.timeout))
            )
    finally:
        worker.stop()
        ensure_services()
    print(f"worker log: {log}")
    for name, ok in results:
        print(f"{'PASS' if ok else 'FAIL'} {name}")
    return 0 if all(ok for _, ok in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
