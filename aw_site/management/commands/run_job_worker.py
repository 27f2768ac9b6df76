"""``manage.py run_job_worker``: one job worker process that polls the database (no broker)."""

from __future__ import annotations

import os
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from aw_site.job_worker import run_worker
from aw_site.jobs import WORKER_SHUTTING_DOWN


class Command(BaseCommand):
    help = "Run queued jobs from the database in this process (AW_JOBS_MODE=db, no broker)."

    def add_arguments(self, parser):
        parser.add_argument("--queues", default="", help="comma-separated queues (default: all)")
        parser.add_argument("--max-jobs", type=int, default=None, help="exit after this many")
        parser.add_argument(
            "--nice", type=int, default=0, help="lower this process's CPU priority (0-19)"
        )

    def handle(self, *args, queues: str, max_jobs: int | None, nice: int, **options):
        if settings.AW_JOBS_MODE == "celery":
            raise CommandError("CELERY_BROKER_URL is set: jobs go to the Celery workers instead")
        if nice > 0:
            # Next to the web server on the same cores: the console answers first, the training
            # and the sandboxes (children inherit it) take what is left.
            os.nice(min(19, nice))
        stop = threading.Event()

        def shut_down(signum, frame):
            # A job cut off here stays running under this worker's name; the next start's
            # recovery or a reaper retries it (jobs are retry-safe).
            WORKER_SHUTTING_DOWN.set()
            stop.set()
            raise SystemExit(0)

        # Ctrl-C in the terminal reaches every process of the group: stop at once either way
        # (also where a non-interactive shell started this one with SIGINT ignored).
        signal.signal(signal.SIGTERM, shut_down)
        signal.signal(signal.SIGINT, shut_down)
        run_worker(stop, queues=[q for q in queues.split(",") if q] or None, max_jobs=max_jobs)
