"""Build one environment from a file or a built-in source through the `environments.build` job.

    python manage.py build_environment --file PATH [--name N] [--title T] [--category "P/S/T"]
    python manage.py build_environment --source NAME

The file is copied under AW_STORAGE_ROOT/uploads/<uuid>/ (the build removes the copy, never the
original) and probed before the job is queued. Without a broker the job runs in this process;
with one, a Celery worker on the sandbox queue runs it. Progress lines are printed until it
ends; the exit code is non-zero when the build fails.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from aw_site.models import Job
from environments.build import submit
from environments.build.request import BuildRequestError
from environments.build.uploads import store_local_file
from environments.models import Environment


class Command(BaseCommand):
    help = "Build, verify and publish one environment from a data file or a built-in source."

    def add_arguments(self, parser):
        origin = parser.add_mutually_exclusive_group(required=True)
        origin.add_argument("--file", help="a data file (CSV, TSV, JSON, JSONL, SQL dump, HTML)")
        origin.add_argument(
            "--source", help="a built-in source name (environments/build/sources.json)"
        )
        parser.add_argument("--name", default="", help="environment name (default: file stem)")
        parser.add_argument("--title", default="")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--category", default="", help='"Primary/Secondary/Tertiary" from the taxonomy'
        )
        parser.add_argument(
            "--no-wait", action="store_true", help="queue the job and print its id only"
        )
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait")

    def handle(self, *args, file, source, name, title, description, category, no_wait, timeout,
               **options):  # fmt: skip
        fields = {
            k: v
            for k, v in {
                "name": name,
                "title": title,
                "description": description,
                "category": category,
            }.items()
            if v
        }
        try:
            if file:
                request = submit.upload_request(store_local_file(file), **fields)
            else:
                request = submit.source_request(source, **fields)
        except BuildRequestError as exc:
            raise CommandError(str(exc)) from exc
        job = submit.queue_build(request)
        self.stdout.write(f"job #{job.pk} {job.kind} {request.target} queued")
        if no_wait:
            return
        if settings.AW_JOBS_MODE == "celery":
            self.stdout.write("waiting for a Celery worker on the sandbox queue")
        record = self.follow(job.pk, timeout)
        if record.state != Job.State.SUCCEEDED:
            raise CommandError(f"build failed: {self.failure(record)}")
        environment = Environment.objects.get(pk=record.result["environment"])
        self.stdout.write(
            self.style.SUCCESS(
                f"built {environment.label}: {environment.tool_count} verified tools, "
                f"{environment.table_count} tables, {environment.row_count} rows"
            )
        )

    def follow(self, job_id: int, timeout: float) -> Job:
        last, deadline = "", time.monotonic() + timeout
        while True:
            record = Job.objects.get(pk=job_id)
            line = f"{record.progress_percent:3d}% {record.message}".rstrip()
            if record.message and line != last:
                self.stdout.write(line)
                last = line
            if record.is_finished:
                return record
            if time.monotonic() > deadline:
                raise CommandError(f"job #{job_id} still {record.state} after {timeout:.0f}s")
            time.sleep(0.3)

    @staticmethod
    def failure(record: Job) -> str:
        draft = (record.result or {}).get("draft_environment")
        environment = Environment.objects.filter(pk=draft).first() if draft else None
        if environment is not None and environment.failure_reason:
            return f"{environment.label} {environment.status}: {environment.failure_reason}"
        return record.error or record.state
