"""A real Celery worker process for tests, bound to the test database and a Redis broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import redis
from django.db import connection

REPO = Path(__file__).resolve().parents[2]
TEST_BROKER_URL = os.environ.get("AW_TEST_BROKER_URL", "redis://127.0.0.1:6379/14")


def redis_available(url: str = TEST_BROKER_URL) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def shared_database_url() -> str:
    """The URL of the database the test run uses, for the worker process to share."""
    settings_dict = connection.settings_dict
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    user = settings_dict.get("USER") or ""
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"


class WorkerProcess:
    def __init__(
        self, hostname: str, queues: str, env: dict[str, str], log_path: Path, pool: str = "solo"
    ):
        self.hostname = hostname
        self.pool = pool
        self.queues = queues
        self.env = env
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> WorkerProcess:
        self._ready_before = self.log().count(f"{self.hostname} ready")
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "aw_site",
                "worker",
                f"--pool={self.pool}",
                "--concurrency=1",
                "--loglevel=INFO",
                "-Q",
                self.queues,
                "-n",
                self.hostname,
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
            ],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.wait_until_ready()
        return self

    def wait_until_ready(self, timeout: float = 90.0) -> None:
        """Fail at once, with the worker's log, when the worker cannot start."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                raise RuntimeError(f"worker exited with {code}:\n{self.log()[-4000:]}")
            if self.log().count(f"{self.hostname} ready") > self._ready_before:
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker not ready after {timeout}s:\n{self.log()[-4000:]}")

    def kill(self) -> None:
        """SIGKILL, as when a machine dies or the OOM killer strikes: no cleanup runs."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextmanager
def celery_worker(
    tmp_path: Path,
    queues: str = "default,sandbox,gpu",
    extra_env: dict[str, str] | None = None,
    pool: str = "solo",
):
    """Run a worker against the test database; the caller's process dispatches through Redis."""
    from django.conf import settings

    from aw_site.celery import app

    redis.Redis.from_url(TEST_BROKER_URL).flushdb()
    env = {
        **os.environ,
        "DATABASE_URL": shared_database_url(),
        "CELERY_BROKER_URL": TEST_BROKER_URL,
        "CELERY_RESULT_BACKEND": TEST_BROKER_URL,
        "AW_STORAGE_ROOT": str(settings.STORAGE_ROOT),
        "AW_JOB_STALE_SECONDS": str(settings.AW_JOB_STALE_SECONDS),
        "PYTHONUNBUFFERED": "1",
        **(extra_env or {}),
    }
    old_mode, old_broker, old_backend = (
        settings.AW_JOBS_MODE,
        app.conf.broker_url,
        app.conf.result_backend,
    )
    settings.AW_JOBS_MODE = "celery"
    app.conf.broker_url = TEST_BROKER_URL
    app.conf.result_backend = TEST_BROKER_URL
    hostname = f"testworker-{uuid.uuid4().hex[:8]}@localhost"
    worker = WorkerProcess(hostname, queues, env, tmp_path / "worker.log", pool).start()
    try:
        yield worker
    finally:
        worker.stop()
        settings.AW_JOBS_MODE = old_mode
        app.conf.broker_url, app.conf.result_backend = old_broker, old_backend


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


def run_job(kind: str, arguments: dict, timeout: float = 120.0):
    """Enqueue one job (after its transaction commits, as the API does) and wait for its end."""
    from django.db import transaction

    from aw_site.jobs import enqueue
    from aw_site.models import Job

    with transaction.atomic():
        job = enqueue(kind, arguments)
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=timeout, message=kind)
    return Job.objects.get(pk=job.pk)
